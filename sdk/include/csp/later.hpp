// C++ layer, answers that come later: csp::pending (a deferred reply) and csp::stream (a streamed
// one), owned, with lambdas for their callbacks. Included by csp/csp.hpp.
#ifndef CSP_LATER_HPP
#define CSP_LATER_HPP

#include <csp/csp.hpp>

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string_view>
#include <utility>

namespace csp {

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

class stream;

/// A deferred reply (csp_reply_defer), owned: finish() it once, from any thread. One that is
/// destroyed unfinished finishes with 500, so a forgotten answer never leaves a client
/// hanging. Move-only; keep it in one place (a state of yours, or the lambda of the next step).
class pending {
public:
    pending() = default;
    /// Defers this call's reply: return CSP_DEFERRED from the handler. Empty if the host could not.
    static pending defer(csp_reply* r) { return pending(csp_reply_defer(r)); }
    static pending defer(reply& r) { return defer(r.raw()); }
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
    static stream start(reply& r, int status = 200) { return start(r.raw(), status); }
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

#endif // CSP_LATER_HPP
