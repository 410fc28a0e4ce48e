// Thin C++ layer over csp.h: string_view in and out, RAII for deferred replies and streams
// (csp/later.hpp, included at the end), lambdas for their callbacks; the same ABI underneath.
#ifndef CSP_CSP_HPP
#define CSP_CSP_HPP

#include <csp/csp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace csp {

inline std::string_view view(csp_str s) { return {s.data ? s.data : "", s.size}; }

inline std::optional<std::string_view> optional_view(csp_str s) {
    if (!s.data) return std::nullopt;
    return std::string_view{s.data, s.size};
}

/// A name and its value: an argument or a header.
struct field {
    std::string_view name, value;
};

/// Fields by index, for range-for: a request's arguments (csp_arg_at) or headers (csp_header_at),
/// or an init context's configuration (csp_config_at).
template <class Source>
class basic_field_range {
public:
    using at_fn = int (*)(const Source*, size_t, csp_str*, csp_str*);
    class iterator {
    public:
        iterator(const Source* s, at_fn at, size_t i) : s_(s), at_(at), i_(i) { load(); }
        const field& operator*() const { return current_; }
        const field* operator->() const { return &current_; }
        iterator& operator++() {
            ++i_;
            load();
            return *this;
        }
        bool operator==(const iterator& o) const { return i_ == o.i_; }
        bool operator!=(const iterator& o) const { return i_ != o.i_; }

    private:
        friend class basic_field_range;
        static constexpr size_t npos = static_cast<size_t>(-1);
        void load() {
            csp_str n{}, v{};
            if (i_ == npos || at_(s_, i_, &n, &v) != 0) i_ = npos;
            else current_ = {view(n), view(v)};
        }
        const Source* s_;
        at_fn at_;
        size_t i_;
        field current_;
    };
    basic_field_range(const Source* s, at_fn at) : s_(s), at_(at) {}
    iterator begin() const { return iterator(s_, at_, 0); }
    iterator end() const { return iterator(s_, at_, iterator::npos); }

private:
    const Source* s_;
    at_fn at_;
};
using field_range = basic_field_range<csp_request>;

/// Read-only request, as the handler sees it.
class request {
public:
    explicit request(const csp_request* r) : r_(r) {}
    std::string_view method() const { return view(r_->method); }
    std::string_view path() const { return view(r_->path); }
    std::string_view query() const { return view(r_->query); }
    std::string_view body() const { return view(r_->body); }
    std::string_view client_addr() const { return view(r_->client_addr); }
    /// The path after /csp/NAME: "" or starting with '/' ("/42" for /csp/users/42).
    std::string_view path_info() const { return view(r_->path_info); }
    std::optional<std::string_view> query_arg(std::string_view name) const {
        return optional_view(r_->api->request_query_arg(r_, name.data(), name.size()));
    }
    std::optional<std::string_view> header(std::string_view name) const {
        return optional_view(r_->api->request_header(r_, name.data(), name.size()));
    }
    template <class T> T* state() const { return static_cast<T*>(r_->state); }
    const csp_request* raw() const { return r_; }
    /// 2.5: charges one request to `key` (csp_limit): 0 to go on, else the seconds to wait.
    unsigned limit(std::string_view key, double rate_per_s, unsigned burst) const {
        return r_->api->limit(r_, key.data(), key.size(), rate_per_s, burst);
    }
    /// 2.6: the handler's own folder beneath --data-dir (csp_request_data_dir); empty without one.
    std::string_view data_dir() const {
        const csp_str dir = r_->api->data_dir(r_, nullptr);
        return dir.data ? std::string_view(dir.data, dir.size) : std::string_view();
    }

    // 2.2
    /// The query's, else an urlencoded body's, first `name`, decoded (csp_form_arg).
    std::optional<std::string_view> form_arg(std::string_view name) const {
        return optional_view(r_->api->request_form_arg(r_, name.data(), name.size()));
    }
    /// The form argument `name` as an integer in [min, max], or `fallback`.
    long long form_int(std::string_view name, long long min, long long max, long long fallback) const {
        long long value = fallback;
        const csp_str s = r_->api->request_form_arg(r_, name.data(), name.size());
        return csp_str_to_int(s, min, max, &value) == 0 ? value : fallback;
    }
    /// Every argument, query then body, repeated names included: `for (auto [name, value] : req.args())`.
    field_range args() const { return {r_, r_->api->request_arg_at}; }
    /// Every header as it came.
    field_range headers() const { return {r_, r_->api->request_header_at}; }
    std::optional<std::string_view> cookie(std::string_view name) const {
        return optional_view(r_->api->request_cookie(r_, name.data(), name.size()));
    }
    std::string_view id() const { return view(r_->api->request_id(r_)); }
    /// One line into cspd's log (csp_log): 0 written, 1 dropped by the rate limit, -1 bad level.
    int log(int level, std::string_view line) const { return r_->api->log(r_, level, line.data(), line.size()); }

    /// The store every worker shares (csp_kv_*): the value, or nullopt when absent.
    std::optional<std::string> kv_get(std::string_view key) const {
        std::string value(256, '\0');
        size_t size = 0;
        // Another worker may grow the value between two reads: read again until it fits.
        for (;;) {
            if (r_->api->kv_get(r_, key.data(), key.size(), value.data(), value.size(), &size) != 0) return std::nullopt;
            if (size <= value.size()) break;
            value.resize(size);
        }
        value.resize(size);
        return value;
    }
    /// 0, or CSP_KV_FULL, CSP_KV_TOO_BIG, CSP_KV_UNAVAILABLE.
    int kv_put(std::string_view key, std::string_view value, unsigned ttl_seconds = 0) const {
        return r_->api->kv_put(r_, key.data(), key.size(), value.data(), value.size(), ttl_seconds);
    }
    bool kv_delete(std::string_view key) const { return r_->api->kv_delete(r_, key.data(), key.size()) == 0; }
    /// The new value, or nullopt when it could not add (logged).
    std::optional<std::int64_t> kv_add(std::string_view key, std::int64_t delta) const {
        std::int64_t result = 0;
        if (r_->api->kv_add(r_, key.data(), key.size(), delta, &result) != 0) return std::nullopt;
        return result;
    }

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

    // Inline helpers (csp/text.h, csp/cookies.h): nothing here costs ABI.
    /// Appends `text` HTML-escaped.
    reply& html(std::string_view text) {
        csp_reply_append_html(r_, text.data(), text.size());
        return *this;
    }
    /// Appends `text` as a quoted JSON string.
    reply& json_string(std::string_view text) {
        csp_reply_json_string(r_, text.data(), text.size());
        return *this;
    }
    /// Appends `text` percent-encoded.
    reply& url_encoded(std::string_view text) {
        csp_reply_url_encode(r_, text.data(), text.size());
        return *this;
    }
    /// `return rep.redirect(303, "/csp/done");` -- -1 (a 500) for an unsafe target or a bad status.
    int redirect(int status, const std::string& location) { return csp_redirect(r_, status, location.c_str()); }
    /// Keeps this reply for later GETs and HEADs of the same Host, path and query (csp_reply_cache).
    bool cache(std::chrono::seconds ttl) { return csp_reply_cache(r_, static_cast<unsigned>(ttl.count())) == 0; }
    /// Makes request header `name` part of the cache key (csp_reply_cache_vary).
    bool cache_vary(std::string_view name) {
        return r_->api->reply_cache_vary(r_, name.data(), name.size()) == 0;
    }
    /// 429 with Retry-After: `seconds` (csp_reply_too_many); return what it returns.
    int too_many(unsigned seconds) { return csp_reply_too_many(r_, seconds); }
    /// Whether this answer may be compressed (csp_reply_compress): false sends it as it is.
    bool compress(bool allowed) {
        return csp_reply_compress(r_, allowed ? CSP_COMPRESS_AUTO : CSP_COMPRESS_OFF) == 0;
    }
    /// One validated Set-Cookie (csp_reply_set_cookie); false if refused.
    bool set_cookie(const std::string& name, const std::string& value, const csp_cookie_options& options = {}) {
        return csp_reply_set_cookie(r_, name.c_str(), value.c_str(), &options) == 0;
    }

private:
    csp_reply* r_;
};

/// What init is told (CSP_HANDLER_WITH_CONTEXT): valid during init only.
///   static int init(const csp_init_context* c, void** state) {
///       csp::init_context ctx(c);
///       auto host = ctx.config("db.host").value_or("localhost"); ...
class init_context {
public:
    explicit init_context(const csp_init_context* c) : c_(c) {}
    std::string_view name() const { return view(c_->name); }
    /// CSP_VETTING while tried in the vetting process.
    unsigned worker_index() const { return c_->worker_index; }
    unsigned worker_count() const { return c_->worker_count; }
    bool vetting() const { return c_->worker_index == CSP_VETTING; }
    std::optional<std::string_view> config(std::string_view key) const {
        return optional_view(c_->api->config(c_, key.data(), key.size()));
    }
    /// Every configuration entry, in the file's order.
    basic_field_range<csp_init_context> config_entries() const { return {c_, c_->api->config_at}; }
    /// 2.6: the handler's own folder beneath --data-dir (csp_data_dir); empty without one.
    std::string_view data_dir() const {
        const csp_str dir = c_->api->data_dir(nullptr, c_);
        return dir.data ? std::string_view(dir.data, dir.size) : std::string_view();
    }
    int log(int level, std::string_view line) const { return c_->api->init_log(c_, level, line.data(), line.size()); }
    const csp_init_context* raw() const { return c_; }

private:
    const csp_init_context* c_;
};

/// The parts of a multipart/form-data request (csp/multipart.h), for range-for; `ok()` after the
/// loop says whether the body was well formed to its end.
///   csp::multipart parts(req.raw());
///   for (const csp_part& part : parts) ...
///   if (!parts.ok()) return 400;
class multipart {
public:
    explicit multipart(const csp_request* r) { valid_ = csp_multipart_begin(&m_, r) == 0; }
    multipart(std::string_view content_type, std::string_view body) {
        valid_ = csp_multipart_init(&m_, {content_type.data(), content_type.size()}, {body.data(), body.size()}) == 0;
    }
    /// The request is multipart/form-data with a boundary.
    bool is_multipart() const { return valid_; }
    /// Well formed so far (to the end, once iterated).
    bool ok() const { return valid_ && m_.state >= 0; }

    class iterator {
    public:
        explicit iterator(multipart* owner) : owner_(owner) { next(); }
        const csp_part& operator*() const { return part_; }
        const csp_part* operator->() const { return &part_; }
        iterator& operator++() {
            next();
            return *this;
        }
        bool operator==(const iterator& o) const { return owner_ == o.owner_; }
        bool operator!=(const iterator& o) const { return owner_ != o.owner_; }

    private:
        friend class multipart;
        iterator() = default;
        void next() {
            if (owner_ && (!owner_->valid_ || csp_multipart_next(&owner_->m_, &part_) != 1)) owner_ = nullptr;
        }
        multipart* owner_ = nullptr;
        csp_part part_{};
    };
    iterator begin() { return iterator(this); }
    iterator end() { return iterator(); }

private:
    csp_multipart m_{};
    bool valid_ = false;
};

} // namespace csp

// Entry points for C++ handlers: the function takes the C++ views directly,
//   static int hello(const csp::request& request, csp::reply& reply) { reply << "hi\n"; return 200; }
//   CSP_CPP_HANDLER(hello)
// Each defines today's C entry point, a csp_handle_fn that wraps its two arguments, and the
// descriptor as the matching CSP_ macro does: to the host it is any handler of this ABI.
// `init`/`cleanup` are as for the C macros (csp::init_context wraps an init's context).
#define CSP_CPP_ENTRY_(handle_fn)                                                   \
    static int csp_cpp_entry_(const csp_request* csp_raw_request, csp_reply* csp_raw_reply) { \
        const ::csp::request csp_request_view(csp_raw_request);                     \
        ::csp::reply csp_reply_view(csp_raw_reply);                                 \
        return handle_fn(csp_request_view, csp_reply_view);                         \
    }
#define CSP_CPP_HANDLER(handle_fn) CSP_CPP_ENTRY_(handle_fn) CSP_HANDLER(csp_cpp_entry_)
#define CSP_CPP_HANDLER_WITH_HOOKS(handle_fn, init_fn, cleanup_fn) \
    CSP_CPP_ENTRY_(handle_fn) CSP_HANDLER_WITH_HOOKS(csp_cpp_entry_, init_fn, cleanup_fn)
#define CSP_CPP_HANDLER_WITH_CONTEXT(handle_fn, init_fn, cleanup_fn) \
    CSP_CPP_ENTRY_(handle_fn) CSP_HANDLER_WITH_CONTEXT(csp_cpp_entry_, init_fn, cleanup_fn)
#define CSP_CPP_BLOCKING_HANDLER(handle_fn) CSP_CPP_ENTRY_(handle_fn) CSP_BLOCKING_HANDLER(csp_cpp_entry_)
#define CSP_CPP_BLOCKING_HANDLER_WITH_HOOKS(handle_fn, init_fn, cleanup_fn) \
    CSP_CPP_ENTRY_(handle_fn) CSP_BLOCKING_HANDLER_WITH_HOOKS(csp_cpp_entry_, init_fn, cleanup_fn)
#define CSP_CPP_BLOCKING_HANDLER_WITH_CONTEXT(handle_fn, init_fn, cleanup_fn) \
    CSP_CPP_ENTRY_(handle_fn) CSP_BLOCKING_HANDLER_WITH_CONTEXT(csp_cpp_entry_, init_fn, cleanup_fn)

#include <csp/later.hpp>
#include <csp/websocket.hpp>

#endif // CSP_CSP_HPP
