#include "handler/sdk_bridge.hpp"

#include "common/ascii.hpp"
#include "http/uri.hpp"

#include <new>

namespace cspd {
namespace {

constexpr std::size_t kKeepCapacity = 64 * 1024;  // larger buffers are freed after the request
constexpr std::size_t kMaxReply = 1ull << 30;     // a handler cannot make the host allocate more

csp_str to_csp(std::string_view s) { return {s.data(), s.size()}; }
csp_str absent() { return {nullptr, 0}; }

/// Field values may hold visible characters, spaces and tabs: never CR, LF or NUL.
bool is_field_value(std::string_view s) {
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
    }
    return true;
}

/// Host-owned headers a handler may not set: they would contradict the framing.
bool is_reserved_header(std::string_view name) {
    return iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "connection") ||
           iequals(name, "date") || iequals(name, "server") || iequals(name, "content-type");
}

}  // namespace

struct HostApi {
    static HandlerReply& reply(csp_reply* r) { return *static_cast<HandlerReply*>(r->host); }
    static const HandlerRequestView& view(const csp_request* r) {
        return *static_cast<const HandlerRequestView*>(r->host);
    }

    static int reply_reserve(csp_reply* r, size_t capacity) noexcept {
        HandlerReply& self = reply(r);
        if (capacity > kMaxReply) return -1;
        try {
            std::size_t grown = std::max(capacity, self.buffer_.size() * 2);
            self.buffer_.resize(grown);
        } catch (const std::bad_alloc&) {
            return -1;
        }
        r->data = self.buffer_.data();
        r->capacity = self.buffer_.size();
        return 0;
    }

    static int set_content_type(csp_reply* r, const char* type, size_t size) noexcept {
        std::string_view value(type, size);
        if (value.empty() || !is_field_value(value)) return -1;
        reply(r).content_type_.assign(value);
        return 0;
    }

    static int add_header(csp_reply* r, const char* name, size_t name_size, const char* value,
                          size_t value_size) noexcept {
        std::string_view n(name, name_size), v(value, value_size);
        if (!is_token(n) || !is_field_value(v) || is_reserved_header(n)) return -1;
        std::string& out = reply(r).extra_headers_;
        out.append(n).append(": ").append(v).append("\r\n");
        return 0;
    }

    static csp_str query_arg(const csp_request* req, const char* name, size_t name_size) noexcept {
        std::string_view wanted(name, name_size);
        std::string_view query(req->query.data, req->query.size);
        while (!query.empty()) {
            auto amp = query.find('&');
            std::string_view pair = query.substr(0, amp);
            query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
            auto eq = pair.find('=');
            std::string_view key = pair.substr(0, eq);
            std::string_view value = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
            if (key != wanted) continue;
            if (value.find_first_of("%+") == std::string_view::npos)
                return to_csp(value.empty() ? std::string_view("", 0) : value);
            auto& store = const_cast<HandlerRequestView&>(view(req)).decoded_args_;
            std::string& decoded = store.emplace_back();
            if (!percent_decode(value, decoded, true)) return absent();
            return to_csp(decoded);
        }
        return absent();
    }

    static csp_str header(const csp_request* req, const char* name, size_t name_size) noexcept {
        const HttpRequest& request = *view(req).request_;
        std::string_view wanted(name, name_size);
        for (const auto& h : request.headers)
            if (iequals(h.name, wanted)) return to_csp(h.value.empty() ? std::string_view("", 0) : h.value);
        return absent();
    }
};

const csp_host_api& host_api() {
    static const csp_host_api api{&HostApi::reply_reserve, &HostApi::set_content_type, &HostApi::add_header,
                                  &HostApi::query_arg, &HostApi::header};
    return api;
}

HandlerReply::HandlerReply() {
    reply_.api = &host_api();
    reply_.host = this;
    reset();
}

void HandlerReply::reset() {
    if (buffer_.size() > kKeepCapacity) std::string().swap(buffer_);
    if (buffer_.empty()) buffer_.resize(4096);
    reply_.data = buffer_.data();
    reply_.capacity = buffer_.size();
    reply_.size = 0;
    content_type_.assign("text/html; charset=utf-8");
    extra_headers_.clear();
}

HandlerRequestView::HandlerRequestView() {
    view_.api = &host_api();
    view_.host = this;
}

void HandlerRequestView::bind(const HttpRequest& request, std::string_view decoded_path, std::string_view query,
                              std::string_view client_addr, unsigned short client_port, void* state) {
    request_ = &request;
    decoded_args_.clear();
    view_.method = to_csp(request.method);
    view_.path = to_csp(decoded_path);
    view_.query = to_csp(query.data() ? query : std::string_view("", 0));
    view_.body = to_csp(request.body.data() ? request.body : std::string_view("", 0));
    view_.client_addr = to_csp(client_addr);
    view_.client_port = client_port;
    view_.http_major = request.http_major;
    view_.http_minor = request.http_minor;
    view_.state = state;
}

}  // namespace cspd
