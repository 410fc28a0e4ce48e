// Thin C++ layer over csp.h: string_view in and out, RAII for deferred replies, lambdas
// for their callbacks; the same ABI underneath.
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

/// The arguments (csp_arg_at) or headers (csp_header_at) of a request, for range-for.
class field_range {
public:
    using at_fn = int (*)(const csp_request*, size_t, csp_str*, csp_str*);
    class iterator {
    public:
        iterator(const csp_request* r, at_fn at, size_t i) : r_(r), at_(at), i_(i) { load(); }
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
        void load() {
            csp_str n{}, v{};
            if (i_ == npos || at_(r_, i_, &n, &v) != 0) i_ = npos;
            else current_ = {view(n), view(v)};
        }
        static constexpr size_t npos = static_cast<size_t>(-1);
        const csp_request* r_;
        at_fn at_;
        size_t i_;
        field current_;
        friend class field_range;
    };
    field_range(const csp_request* r, at_fn at) : r_(r), at_(at) {}
    iterator begin() const { return iterator(r_, at_, 0); }
    iterator end() const { return iterator(r_, at_, iterator::npos); }

private:
    const csp_request* r_;
    at_fn at_;
};

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
        if (r_->api->kv_get(r_, key.data(), key.size(), value.data(), value.size(), &size) != 0) return std::nullopt;
        if (size > value.size()) {
            value.resize(size);
            if (r_->api->kv_get(r_, key.data(), key.size(), value.data(), value.size(), &size) != 0) return std::nullopt;
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
    /// One validated Set-Cookie (csp_reply_set_cookie); false if refused.
    bool set_cookie(const std::string& name, const std::string& value, const csp_cookie_options& options = {}) {
        return csp_reply_set_cookie(r_, name.c_str(), value.c_str(), &options) == 0;
    }

private:
    csp_reply* r_;
};

namespace detail {
/// The lambdas of one deferred reply's callbacks, freed by the host's csp_pending_on_done
/// (once no callback of the reply can run). Each runs at most once.
struct callbacks {
    struct node {
        std::function<void(int, unsigned)> fn;
        std::weak_ptr<callbacks> owner;
        std::list<node>::iterator self;
    };
    std::list<node> nodes;
    std::list<std::shared_ptr<void>> kept;  // what else lives until the host is done with the reply

    static void* add(const std::shared_ptr<callbacks>& all, std::function<void(int, unsigned)> fn) {
        all->nodes.push_back({std::move(fn), all, {}});
        all->nodes.back().self = std::prev(all->nodes.end());
        return &all->nodes.back();
    }
    /// Runs a node's lambda where it is, leaving it for a later call (the abort callback may be
    /// told twice: a drain's warning, then the loss).
    static void run_again(void* user_data, int a, unsigned b) {
        node* n = static_cast<node*>(user_data);
        if (std::shared_ptr<callbacks> keep = n->owner.lock()) n->fn(a, b);
    }
    /// Runs a node's lambda once; the lambda may finish the reply meanwhile.
    static void run(void* user_data, int a, unsigned b) {
        node* n = static_cast<node*>(user_data);
        std::shared_ptr<callbacks> keep = n->owner.lock();
        if (!keep) return;
        std::function<void(int, unsigned)> fn = std::move(n->fn);
        keep->nodes.erase(n->self);
        fn(a, b);
    }
    /// The host is done with the reply: what its callbacks held goes.
    static void release(csp_pending*, void* user_data) { delete static_cast<std::shared_ptr<callbacks>*>(user_data); }
};
} // namespace detail

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

class stream;

/// A deferred reply (csp_reply_defer), owned: finish() it once, from any thread. One that is
/// destroyed unfinished finishes with 500, so a forgotten answer never leaves a client
/// hanging. Move-only; keep it in one place (a state of yours, or the lambda of the next step).
class pending {
public:
    pending() = default;
    /// Defers this call's reply: return CSP_DEFERRED from the handler. Empty if the host could not.
    static pending defer(csp_reply* r) { return pending(csp_reply_defer(r)); }
    explicit pending(csp_pending* p) : p_(p) {}
    pending(pending&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)), callbacks_(std::move(o.callbacks_)),
          host_holds_callbacks_(o.host_holds_callbacks_) {}
    pending& operator=(pending&& o) noexcept {
        if (this != &o) {
            if (p_) finish(500);
            p_ = std::exchange(o.p_, nullptr);
            callbacks_ = std::move(o.callbacks_);
            host_holds_callbacks_ = o.host_holds_callbacks_;
        }
        return *this;
    }
    pending(const pending&) = delete;
    pending& operator=(const pending&) = delete;
    ~pending() {
        if (p_) finish(500);
    }

    explicit operator bool() const { return p_ != nullptr; }
    csp_pending* get() const { return p_; }

    /// The reply to fill before finish(); only while the handle holds a reply.
    csp::reply reply() const { return csp::reply(csp_pending_reply(p_)); }
    /// Sends it with `status`; true if its client will see it. The handle is empty afterwards
    /// (finishing an empty one does nothing and gives false).
    bool finish(int status) {
        if (!p_) return false;
        if (host_holds_callbacks_) callbacks_.reset();  // the host's reference (freed in on_done) keeps them
        return csp_pending_finish(std::exchange(p_, nullptr), status) == 0;
    }

    /// `fn(int reason)` on the loop: CSP_ABORT_DRAINING as a warning, then once more when the
    /// reply will not reach its client (see csp_pending_on_abort).
    template <class Fn>
    bool on_abort(Fn fn) {
        void* node = detail::callbacks::add(all(), [fn = std::move(fn)](int reason, unsigned) mutable { fn(reason); });
        return csp_pending_on_abort(
                   p_, [](csp_pending*, int reason, void* data) { detail::callbacks::run_again(data, reason, 0); },
                   node) == 0;
    }
    /// `fn()` on the loop after `delay` (from the handler's call on a loop, or a loop callback).
    template <class Fn>
    bool after(std::chrono::milliseconds delay, Fn fn) {
        void* node = detail::callbacks::add(all(), [fn = std::move(fn)](int, unsigned) mutable { fn(); });
        return csp_loop_timer(
                   p_, static_cast<unsigned>(delay.count()),
                   [](csp_pending*, void* data) { detail::callbacks::run(data, 0, 0); }, node) == 0;
    }
    /// `fn(unsigned ready)` on the loop once `fd` is ready for `events` (CSP_READABLE | CSP_WRITABLE).
    template <class Fn>
    bool when_ready(int fd, unsigned events, Fn fn) {
        void* node = detail::callbacks::add(all(), [fn = std::move(fn)](int, unsigned ready) mutable { fn(ready); });
        return csp_loop_watch_fd(
                   p_, fd, events,
                   [](csp_pending*, int, unsigned ready, void* data) { detail::callbacks::run(data, 0, ready); },
                   node) == 0;
    }

private:
    friend class stream;
    /// Keeps `fn` (an owned std::function) until the host is done with the reply.
    bool on_done_free(std::function<void()>* fn) {
        if (!p_) return false;
        all()->kept.emplace_back(fn, [](void* f) { delete static_cast<std::function<void()>*>(f); });
        return true;
    }

    const std::shared_ptr<detail::callbacks>& all() {
        if (!callbacks_) {
            callbacks_ = std::make_shared<detail::callbacks>();
            // The host holds them until no callback can run any more.
            auto* held = new std::shared_ptr<detail::callbacks>(callbacks_);
            host_holds_callbacks_ = csp_pending_on_done(p_, &detail::callbacks::release, held) == 0;
            if (!host_holds_callbacks_) delete held;  // then this handle keeps them until it goes
        }
        return callbacks_;
    }
    csp_pending* p_ = nullptr;
    std::shared_ptr<detail::callbacks> callbacks_;
    bool host_holds_callbacks_ = false;
};

/// A streamed reply (csp_reply_stream), owned: write to it from any thread, end() it once. One
/// destroyed without end() is cut short (the client sees an incomplete body). Move-only.
///   auto s = csp::stream::start(reply, 200);
///   s << "first line\n";
///   s.end();
class stream {
public:
    stream() = default;
    /// Sends the head and streams the reply: return CSP_DEFERRED from the handler. Empty if the
    /// host could not (a bad status, or no memory): then answer as usual.
    static stream start(csp_reply* r, int status = 200) { return stream(csp_reply_stream(r, status)); }
    explicit stream(csp_stream* s) : s_(s), p_(csp_stream_pending(s)) {}
    stream(stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)), p_(std::move(o.p_)) {}
    stream& operator=(stream&& o) noexcept {
        if (this != &o) {
            p_ = std::move(o.p_);  // cuts what this held, if it had not ended
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;

    explicit operator bool() const { return s_ != nullptr; }
    csp_stream* get() const { return s_; }

    /// 0; CSP_AGAIN (on an event loop: taken, but wait for on_writable before more); -1 when the
    /// client will not see it.
    int write(std::string_view bytes) { return csp_stream_write(s_, bytes.data(), bytes.size()); }
    /// Writes, remembering the outcome in last() (check it before writing more on a loop).
    stream& operator<<(std::string_view bytes) {
        last_ = write(bytes);
        return *this;
    }
    int last() const { return last_; }
    /// One server-sent event ("" for no event name).
    int event(std::string_view name, std::string_view data) {
        if (!s_) return -1;
        return s_->api->stream_event(s_, name.data(), name.size(), data.data(), data.size());
    }
    /// Ends the body; true if the client will see the end. The stream is empty afterwards.
    bool end() {
        s_ = nullptr;
        return p_.finish(200);
    }
    /// Cuts the body short: the client sees it incomplete.
    void cut() {
        s_ = nullptr;
        p_.finish(500);
    }

    /// `fn()` on the loop each time the connection has room after a write gave CSP_AGAIN.
    template <class Fn>
    bool on_writable(Fn fn) {
        auto* held = new std::function<void()>(std::move(fn));
        // Freed when the reply is done: no callback of it runs after that.
        if (!p_.on_done_free(held)) {
            delete held;
            return false;
        }
        return csp_stream_on_writable(
                   s_, [](csp_stream*, void* data) { (*static_cast<std::function<void()>*>(data))(); }, held) == 0;
    }
    /// As csp::pending: the client went away (or the server drains), a timer, an fd watch.
    template <class Fn> bool on_abort(Fn fn) { return p_.on_abort(std::move(fn)); }
    template <class Fn> bool after(std::chrono::milliseconds delay, Fn fn) { return p_.after(delay, std::move(fn)); }
    template <class Fn> bool when_ready(int fd, unsigned events, Fn fn) {
        return p_.when_ready(fd, events, std::move(fn));
    }

private:
    csp_stream* s_ = nullptr;
    pending p_;
    int last_ = 0;
};

} // namespace csp

#endif // CSP_CSP_HPP
