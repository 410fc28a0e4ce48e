// Thin C++ layer over csp.h: string_view in and out, same ABI underneath.
#ifndef CSP_CSP_HPP
#define CSP_CSP_HPP

#include <csp/csp.h>

#include <optional>
#include <string_view>

namespace csp {

inline std::string_view view(csp_str s) { return {s.data ? s.data : "", s.size}; }

inline std::optional<std::string_view> optional_view(csp_str s) {
    if (!s.data) return std::nullopt;
    return std::string_view{s.data, s.size};
}

/// Read-only request, as the handler sees it.
class request {
public:
    explicit request(const csp_request* r) : r_(r) {}
    std::string_view method() const { return view(r_->method); }
    std::string_view path() const { return view(r_->path); }
    std::string_view query() const { return view(r_->query); }
    std::string_view body() const { return view(r_->body); }
    std::string_view client_addr() const { return view(r_->client_addr); }
    std::optional<std::string_view> query_arg(std::string_view name) const {
        return optional_view(r_->api->request_query_arg(r_, name.data(), name.size()));
    }
    std::optional<std::string_view> header(std::string_view name) const {
        return optional_view(r_->api->request_header(r_, name.data(), name.size()));
    }
    template <class T> T* state() const { return static_cast<T*>(r_->state); }
    const csp_request* raw() const { return r_; }

private:
    const csp_request* r_;
};

/// The reply buffer; appends go straight into the host's buffer.
class reply {
public:
    explicit reply(csp_reply* r) : r_(r) {}
    reply& append(std::string_view bytes) {
        csp_reply_append(r_, bytes.data(), bytes.size());
        return *this;
    }
    reply& operator<<(std::string_view bytes) { return append(bytes); }
    bool content_type(std::string_view type) {
        return r_->api->reply_set_content_type(r_, type.data(), type.size()) == 0;
    }
    bool header(std::string_view name, std::string_view value) {
        return r_->api->reply_add_header(r_, name.data(), name.size(), value.data(), value.size()) == 0;
    }
    csp_reply* raw() const { return r_; }

private:
    csp_reply* r_;
};

} // namespace csp

#endif // CSP_CSP_HPP
