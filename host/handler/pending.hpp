// The host's side of a csp_pending: a reply that a handler finishes later, from any
// thread, after csp_reply_defer -- or streams, after csp_reply_stream (the same object then
// also answers to a csp_stream handle). The handler layer knows only this interface; the serving
// layer implements it (PendingExchange: the exchange whose answer it is, on the loop that runs
// its timers and fd watches).
#pragma once

#include <csp/csp.h>

#include <string_view>

namespace cspd {

class PendingReply {
public:
    /// Where a handler's csp_reply_defer goes: set on the reply, for one call, by whoever runs it.
    class Source {
    public:
        /// The handler asks to finish its reply later; null if that cannot be (answer now).
        virtual PendingReply* defer() noexcept = 0;

    protected:
        ~Source() = default;
    };

    PendingReply() noexcept;
    PendingReply(const PendingReply&) = delete;
    PendingReply& operator=(const PendingReply&) = delete;

    /// The handle handed to the handler.
    csp_pending* handle() noexcept { return &handle_; }
    static PendingReply& of(csp_pending* handle) noexcept { return *static_cast<PendingReply*>(handle->host); }
    csp_stream* stream_handle() noexcept { return &stream_handle_; }
    static PendingReply& of(csp_stream* handle) noexcept { return *static_cast<PendingReply*>(handle->host); }

    /// The reply to fill before finish(). Any thread, one at a time.
    virtual csp_reply* reply() noexcept = 0;
    /// Sends the reply (any thread, once); 0, or -1 if its client will not see it.
    virtual int finish(int status) noexcept = 0;
    /// `fn` runs on the loop at most twice: with CSP_ABORT_DRAINING as a warning (a drain began),
    /// and once when the reply will not reach its client (the first such reason). Never after finish().
    virtual int on_abort(csp_abort_fn fn, void* user_data) noexcept = 0;
    /// One-shot timer and fd watch on the loop that owns the reply; -1 off that loop's thread.
    virtual int timer(unsigned milliseconds, csp_timer_fn fn, void* user_data) noexcept = 0;
    virtual int watch_fd(int fd, unsigned events, csp_fd_fn fn, void* user_data) noexcept = 0;
    /// `fn` runs on the loop once the reply is done and none of its callbacks will run again.
    virtual int on_done(csp_done_fn fn, void* user_data) noexcept = 0;

    /// Sends the head with `status` (already checked) and streams the body from now on; null if
    /// the reply is a stream already, or finished.
    virtual csp_stream* start_stream(int status) noexcept = 0;
    /// Stream bytes (any thread): 0, CSP_AGAIN (taken; past the high-water mark), -1 (not seen).
    virtual int stream_write(std::string_view bytes) noexcept = 0;
    virtual int stream_event(std::string_view event, std::string_view data) noexcept = 0;
    virtual int on_writable(csp_writable_fn fn, void* user_data) noexcept = 0;

protected:
    ~PendingReply() = default;

private:
    csp_pending handle_;
    csp_stream stream_handle_;
};

} // namespace cspd
