#include "handler/sdk_bridge.hpp"

#include "common/ascii.hpp"
#include "handler/sdk_toolkit.hpp"
#include "handler/sdk_websocket.hpp"
#include "http/status.hpp"
#include "http/uri.hpp"

#include <algorithm>
#include <new>
#include <utility>

namespace cspd {
namespace {

constexpr std::size_t kFirstCapacity = 4096;       // the first growth: most replies fit
constexpr std::size_t kKeepCapacity = 64 * 1024;  // larger buffers are freed after the request
constexpr std::size_t kMaxReply = 1ull << 30;     // a handler cannot make the host allocate more

csp_str to_csp(std::string_view s) { return {s.data(), s.size()}; }
csp_str absent() { return {nullptr, 0}; }
csp_str present(std::string_view s) { return to_csp(s.data() ? s : std::string_view("", 0)); }

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
    static const HandlerRequestView& view(const void* host) { return *static_cast<const HandlerRequestView*>(host); }

    static int reply_reserve(csp_reply* r, size_t capacity) noexcept {
        HandlerReply& self = reply(r);
        if (capacity > kMaxReply) return -1;
        try {
            std::size_t grown = std::max({capacity, self.buffer_.size() * 2, kFirstCapacity});
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
        try {
            reply(r).content_type_.assign(value);
        } catch (const std::bad_alloc&) {
            return -1;
        }
        return 0;
    }

    static int add_header(csp_reply* r, const char* name, size_t name_size, const char* value,
                          size_t value_size) noexcept {
        std::string_view n(name, name_size), v(value, value_size);
        if (!is_token(n) || !is_field_value(v) || is_reserved_header(n)) return -1;
        try {
            reply(r).fields_.add(n, v);
        } catch (const std::bad_alloc&) {
            return -1;
        }
        return 0;
    }

    static csp_str query_arg_of(const HandlerRequestView& self, csp_str raw_query, std::string_view wanted) noexcept {
        return ToolkitApi::find_field(self, {raw_query.data, raw_query.size}, wanted);
    }

    static csp_str header_of(const HandlerRequestView& self, std::string_view wanted) noexcept {
        for (const auto& h : self.request_->headers)
            if (iequals(h.name, wanted)) return to_csp(h.value.empty() ? std::string_view("", 0) : h.value);
        return absent();
    }

    static csp_str query_arg(const csp_request* req, const char* name, size_t name_size) noexcept {
        return query_arg_of(view(req->host), req->query, {name, name_size});
    }
    static csp_str header(const csp_request* req, const char* name, size_t name_size) noexcept {
        return header_of(view(req->host), {name, name_size});
    }
    static csp_str query_arg_v1(const abi1::request* req, const char* name, size_t name_size) noexcept {
        return query_arg_of(view(req->host), req->query, {name, name_size});
    }
    static csp_str header_v1(const abi1::request* req, const char* name, size_t name_size) noexcept {
        return header_of(view(req->host), {name, name_size});
    }

    static csp_pending* reply_defer(csp_reply* r) noexcept {
        HandlerReply& self = reply(r);
        PendingReply::Source* hook = std::exchange(self.pending_source_, nullptr);  // once per call
        PendingReply* pending = hook ? hook->defer() : nullptr;
        return pending ? pending->handle() : nullptr;
    }
    static csp_reply* pending_reply(csp_pending* p) noexcept { return p ? PendingReply::of(p).reply() : nullptr; }
    static int pending_finish(csp_pending* p, int status) noexcept {
        return p ? PendingReply::of(p).finish(status) : -1;
    }
    static int pending_on_abort(csp_pending* p, csp_abort_fn fn, void* user_data) noexcept {
        return p ? PendingReply::of(p).on_abort(fn, user_data) : -1;
    }
    static int loop_timer(csp_pending* p, unsigned ms, csp_timer_fn fn, void* user_data) noexcept {
        return p && fn ? PendingReply::of(p).timer(ms, fn, user_data) : -1;
    }
    static int pending_on_done(csp_pending* p, csp_done_fn fn, void* user_data) noexcept {
        return p && fn ? PendingReply::of(p).on_done(fn, user_data) : -1;
    }
    static int loop_watch_fd(csp_pending* p, int fd, unsigned events, csp_fd_fn fn, void* user_data) noexcept {
        if (!p || !fn || fd < 0 || (events & (CSP_READABLE | CSP_WRITABLE)) == 0) return -1;
        return PendingReply::of(p).watch_fd(fd, events, fn, user_data);
    }

    static csp_stream* reply_stream(csp_reply* r, int status) noexcept {
        // A body must be allowed: 1xx, 204, 205 and 304 have none.
        if (!r || status < 200 || status > 599 || forbids_body(HttpStatus(status))) return nullptr;
        HandlerReply& self = reply(r);
        PendingReply* pending = self.pending_;  // a deferred reply (or a blocking call) streams later
        if (!pending) {
            PendingReply::Source* hook = std::exchange(self.pending_source_, nullptr);
            pending = hook ? hook->defer() : nullptr;
        }
        return pending ? pending->start_stream(status) : nullptr;
    }
    static int stream_write(csp_stream* s, const void* bytes, size_t size) noexcept {
        if (!s || (!bytes && size)) return -1;
        return PendingReply::of(s).stream_write({static_cast<const char*>(bytes), size});
    }
    static int stream_event(csp_stream* s, const char* event, size_t event_size, const char* data,
                            size_t data_size) noexcept {
        if (!s || (!event && event_size) || (!data && data_size)) return -1;
        const std::string_view name(event ? event : "", event_size);
        if (name.find_first_of("\r\n") != std::string_view::npos) return -1;
        return PendingReply::of(s).stream_event(name, {data ? data : "", data_size});
    }
    static int stream_end(csp_stream* s) noexcept { return s ? PendingReply::of(s).finish(200) : -1; }
    static int stream_on_writable(csp_stream* s, csp_writable_fn fn, void* user_data) noexcept {
        return s && fn ? PendingReply::of(s).on_writable(fn, user_data) : -1;
    }
    static csp_pending* stream_pending(csp_stream* s) noexcept { return s ? PendingReply::of(s).handle() : nullptr; }
};

const csp_host_api& host_api() {
    static const csp_host_api api{sizeof(csp_host_api),    &HostApi::reply_reserve,  &HostApi::set_content_type,
                                  &HostApi::add_header,    &HostApi::query_arg,      &HostApi::header,
                                  &HostApi::reply_defer,   &HostApi::pending_reply,  &HostApi::pending_finish,
                                  &HostApi::pending_on_abort, &HostApi::loop_timer,  &HostApi::loop_watch_fd,
                                  &HostApi::pending_on_done,
                                  // 2.1
                                  &HostApi::reply_stream, &HostApi::stream_write, &HostApi::stream_event,
                                  &HostApi::stream_end, &HostApi::stream_on_writable, &HostApi::stream_pending,
                                  // 2.2
                                  &ToolkitApi::form_arg, &ToolkitApi::arg_at, &ToolkitApi::header_at,
                                  &ToolkitApi::cookie, &ToolkitApi::request_id, &ToolkitApi::log,
                                  &ToolkitApi::kv_get, &ToolkitApi::kv_put, &ToolkitApi::kv_delete,
                                  &ToolkitApi::kv_add, &ToolkitApi::reply_cache, &ToolkitApi::reply_cache_vary,
                                  &ToolkitApi::config, &ToolkitApi::config_at, &ToolkitApi::init_log,
                                  // 2.4
                                  &WebSocketApi::accept, &WebSocketApi::refuse, &WebSocketApi::send,
                                  &WebSocketApi::close, &WebSocketApi::subscribe, &WebSocketApi::unsubscribe,
                                  &WebSocketApi::publish,
                                  // 2.5
                                  &ToolkitApi::reply_compress, &ToolkitApi::limit,
                                  // 2.6
                                  &ToolkitApi::data_dir};
    return api;
}

const abi1::host_api& host_api_v1() {
    static const abi1::host_api api{&HostApi::reply_reserve, &HostApi::set_content_type, &HostApi::add_header,
                                    &HostApi::query_arg_v1, &HostApi::header_v1};
    return api;
}

PendingReply::PendingReply() noexcept : handle_{&host_api(), this}, stream_handle_{&host_api(), this} {}

WebSocketChannel::WebSocketChannel() noexcept : handle_{&host_api(), this} {}

HandlerReply::HandlerReply() {
    reply_.host = this;
    reset();
}

void HandlerReply::reset(HandlerAbi abi) {
    // ABI 1's csp_reply had the same layout; only the table its api points at differs.
    reply_.api = abi == HandlerAbi::v1 ? reinterpret_cast<const csp_host_api*>(&host_api_v1()) : &host_api();
    pending_source_ = nullptr;
    pending_ = nullptr;
    websocket_source_ = nullptr;
    websocket_ = nullptr;
    websocket_protocol_.clear();
    websocket_extensions_.clear();
    // No buffer until the first append: a deferred reply that waits holds none. A loop's reply
    // keeps what it grew to (up to kKeepCapacity), so the request path allocates only once.
    if (buffer_.size() > kKeepCapacity) std::string().swap(buffer_);
    reply_.data = buffer_.data();
    reply_.capacity = buffer_.size();
    reply_.size = 0;
    content_type_.assign("text/html; charset=utf-8");
    fields_.clear();
    cache_seconds_ = 0;
    cache_vary_.clear();
    compress_ = true;
}

struct HandlerRequestView::Kept {
    std::deque<std::string> bytes;  // a deque: what was stored never moves
    std::vector<HttpHeader> headers;
    HttpRequest request;

    std::string_view store(std::string_view s) { return s.data() ? std::string_view(bytes.emplace_back(s)) : s; }
    csp_str store(csp_str s) {
        if (!s.data) return s;
        const std::string_view kept = store(std::string_view(s.data, s.size));
        return {kept.data(), kept.size()};
    }
};

void HandlerRequestView::keep() {
    if (kept_) return;
    auto kept = std::make_unique<Kept>();
    HttpRequest& r = kept->request;
    r = *request_;
    r.method = kept->store(request_->method);
    r.target = kept->store(request_->target);
    r.protocol = kept->store(request_->protocol);  // HTTP/2's :protocol: a blocking call's accept reads it
    // A spilled body is a mapping the request co-owns: kept by reference, never copied.
    r.body = request_->body_owner ? request_->body : kept->store(request_->body);
    kept->headers.reserve(request_->headers.size());
    for (const HttpHeader& h : request_->headers) kept->headers.push_back({kept->store(h.name), kept->store(h.value)});
    r.headers = kept->headers;
    const auto repoint = [&](auto& view) {
        view.method = to_csp(r.method);
        view.body = present(r.body);
        view.path = kept->store(view.path);
        view.query = kept->store(view.query);
        view.client_addr = kept->store(view.client_addr);
    };
    if (abi_ == HandlerAbi::v1) {
        repoint(view_v1_);
    } else {
        repoint(view_);
        view_.path_info = kept->store(view_.path_info);
    }
    request_ = &kept->request;
    kept_ = std::move(kept);
    // What was found in the connection's buffers is found again in the copies.
    args_listed_ = false;
    args_.clear();
    id_text_ = {};
    id_state_.store(0, std::memory_order_relaxed);
}

HandlerRequestView::~HandlerRequestView() = default;

HandlerRequestView::HandlerRequestView() {
    view_.size = sizeof view_;
    view_.api = &host_api();
    view_.host = this;
    view_v1_.api = &host_api_v1();
    view_v1_.host = this;
}

namespace {

/// The fields every ABI's request view has, under the same names.
template <class View>
void fill_common(View& view, const HttpRequest& request, const HandlerRequestView::Context& context) {
    view.method = to_csp(request.method);
    view.path = to_csp(context.decoded_path);
    view.query = present(context.query);
    view.body = present(request.body);
    view.client_addr = to_csp(context.client_addr);
    view.client_port = context.client_port;
    view.http_major = request.http_major;
    view.http_minor = request.http_minor;
    view.state = context.state;
}
}  // namespace

void HandlerRequestView::bind(const HttpRequest& request, const Context& context, HandlerAbi abi) {
    request_ = &request;
    abi_ = abi;
    kept_.reset();
    decoded_args_.clear();
    version_ = context.version;
    id_ = context.id;
    id_text_ = {};
    id_state_.store(0, std::memory_order_relaxed);
    args_listed_ = false;
    args_.clear();
    if (abi == HandlerAbi::v1) {
        fill_common(view_v1_, request, context);
        return;
    }
    fill_common(view_, request, context);
    view_.path_info = present(context.path_info);
}

}  // namespace cspd
