// An exchange whose answer is pending: one request, routed to a handler that deferred its
// reply (csp_reply_defer), streams it (csp_reply_stream), or is a blocking handler's call
// running on the pool. It is what the SDK's csp_pending and csp_stream talk to (never the
// connection): it owns the call's view and reply (so the request stays valid), pins the
// handler version, runs the handler's timers and fd watches on its loop, and sends, counts and
// caches the answer when it comes (send_answer, send_timeout, count_stream: the one way a
// pending answer ends). Its Waiter -- the protocol session that routed the request -- decides
// only where the bytes go and what the connection does next.
//
// Lifetime: shared_ptr. The waiting session holds one until it is answered or goes
// away; the handler's csp_pending holds one (self_) from the deferral (or a blocking call's
// stream) until its finish has been taken in on the loop; a blocking call's pool thread
// holds one while it runs. Loop state (timers, watches, callbacks) is touched on the loop
// thread only; finish() may come from any thread and reaches the loop through its LoopInbox.
#pragma once

#include "handler/pending.hpp"
#include "routing/handler_call.hpp"
#include "serving/access_log.hpp"
#include "serving/loop_inbox.hpp"
#include "serving/exchange/stream_outbox.hpp"
#include "serving/exchange/websocket_link.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>

namespace cspd {

class Router;
struct LoopSlot;

/// A blocking handler's call may accept its request as a WebSocket: the session can carry one.
struct WebSocketOffer {
    bool deflate = false;     ///< permessage-deflate may be agreed (--ws-deflate)
    LoopSlot* slot = nullptr; ///< the loop's, for the watchdog's mark on callbacks
};

class PendingExchange final : public PendingReply,
                              public WebSocketChannel::Source,
                              public std::enable_shared_from_this<PendingExchange> {
public:
    /// Who waits for the answer (the protocol session that routed the request); called on the loop.
    class Waiter {
    public:
        /// The call was finished with `returned` (empty: it threw), unless it was dropped first.
        virtual void answered(PendingExchange& pending, std::optional<int> returned) = 0;
        /// A stream has bytes waiting in its outbox, or its head to send.
        virtual void stream_output(PendingExchange& pending) = 0;
        /// How this protocol frames a streamed body for a request framed as `frame` (asked once,
        /// when the pending exchange is made).
        virtual StreamOutbox::Framing stream_framing(const ResponseFrame& frame) const = 0;

    protected:
        ~Waiter() = default;
    };

    /// `waiter` is held until the call is finished or dropped.
    PendingExchange(boost::asio::io_context& io, std::shared_ptr<LoopInbox> inbox, std::unique_ptr<CallState> call,
                    ResponseFrame frame, bool blocking, std::shared_ptr<Waiter> waiter);
    ~PendingExchange();

    /// On the loop, when the answer came (`returned`: the handler's status, empty if it threw):
    /// checked, sent to `sink` as `frame` says (the request's, or a drain's that closes),
    /// counted for the loop and the handler, and kept if the handler asked (csp_reply_cache).
    CallStatus send_answer(std::optional<int> returned, const ResponseFrame& frame, Router& router,
                           ResponseSink& sink);
    /// On the loop, when no answer came in time: the handler is told (CSP_ABORT_TIMEOUT), and a
    /// 504 that closes is sent to `sink` and counted.
    void send_timeout(Router& router, ResponseSink& sink);
    /// On the loop, when a stream is over: the status its head said is counted for the loop and
    /// the handler.
    void count_stream(Router& router);

    /// For the access log, kept by the session that waits: when the request was routed, and
    /// what of the answer has gone out.
    AnswerFacts access;

    /// The handler holds a reference from now until its finish has been taken in.
    void hand_to_handler() { self_ = shared_from_this(); }

    CallState& call() { return *call_; }
    /// Gives the call back (a blocking call the pool refused): this pending is then unused.
    std::unique_ptr<CallState> release_call() { return std::move(call_); }
    const ResponseFrame& frame() const { return frame_; }
    bool blocking() const { return blocking_; }

    /// On the loop: the client will not see the answer (`reason`: CSP_ABORT_*). Tells the handler
    /// once; the answer, when it comes, is dropped. The handler's timers and watches go on (it may
    /// need them to wind its I/O down), unless the loop itself is going (`loop_ending`).
    void drop(int reason, bool loop_ending = false);
    /// On the loop: the server is stopping soon. Tells the handler (once), and keeps waiting.
    void warn_draining();

    /// A blocking call returned (from its pool thread).
    void blocking_call_returned(std::optional<int> returned);

    /// Before a blocking call is queued: its handler may accept a WebSocket (csp_ws_accept).
    void offer_websocket(const WebSocketOffer& offer);
    /// WebSocketChannel::Source, on the blocking call's thread: the conversation is made there and
    /// carried once the call has returned.
    WebSocketChannel* accept_websocket(const csp_ws_callbacks& callbacks) noexcept override;
    /// On the loop, once the call has returned: the WebSocket its handler accepted, taken by the
    /// session that carries it (null: none). One not taken when the call is done is told it ended.
    std::shared_ptr<WebSocketLink> take_websocket() { return std::move(websocket_); }
    /// On the loop: the accepting answer (101, or HTTP/2's 200) for the WebSocket taken, sent to
    /// `sink` and counted.
    CallStatus send_websocket_accept(std::optional<int> returned, Router& router, ResponseSink& sink);
    /// The client will not see the answer (any thread).
    bool dropped() const { return dropped_; }

    /// The reply is a stream (its head and body go through stream()).
    bool streaming() const { return streaming_.load(std::memory_order_acquire); }
    StreamOutbox& stream() { return *stream_; }
    /// On the loop, once streaming(): the stream's head, the first time it is asked for (its
    /// session sends it before the body's first bytes); nothing after. Views into this exchange.
    std::optional<Response> take_stream_head();
    /// The stream ignored back-pressure and was cut: the connection closes.
    bool cut() const { return cut_; }
    int stream_status() const { return stream_status_; }
    /// On the loop: the socket still holds `backlog` bytes of the stream; a writer that was told
    /// CSP_AGAIN hears of room through its on-writable callback.
    void stream_room(std::size_t backlog);

    // PendingReply: what the handler calls.
    csp_reply* reply() noexcept override;
    int finish(int status) noexcept override;
    int on_abort(csp_abort_fn fn, void* user_data) noexcept override;
    int timer(unsigned milliseconds, csp_timer_fn fn, void* user_data) noexcept override;
    int watch_fd(int fd, unsigned events, csp_fd_fn fn, void* user_data) noexcept override;
    int on_done(csp_done_fn fn, void* user_data) noexcept override;
    csp_stream* start_stream(int status) noexcept override;
    int stream_write(std::string_view bytes) noexcept override;
    int stream_event(std::string_view event, std::string_view data) noexcept override;
    int on_writable(csp_writable_fn fn, void* user_data) noexcept override;

private:
    struct Watch;
    /// On the loop, once: the answer is in (or the call is dropped); callbacks stop.
    void finished(std::optional<int> returned);
    void notify_abort(int reason, bool loss);  // loss: the reply will not reach its client
    void cancel_callbacks();
    /// After a stream write: tells the loop, or cuts a stream that ignored back-pressure.
    int after_stream_write(StreamOutbox::Result result);
    void poke_loop();

    boost::asio::io_context& io_;
    std::shared_ptr<LoopInbox> inbox_;
    std::unique_ptr<CallState> call_;
    ResponseFrame frame_;
    bool blocking_;
    std::shared_ptr<Waiter> waiter_;
    std::shared_ptr<PendingExchange> self_;     // the handler's reference, until its finish is taken in
    std::atomic<bool> finish_called_{false};
    std::atomic<bool> dropped_{false};
    bool done_ = false;                     // loop: finished() ran
    std::mutex abort_mutex_;                // the callback may be set on a handler's thread
    csp_abort_fn abort_fn_ = nullptr;
    void* abort_user_data_ = nullptr;
    int lost_reason_ = 0;                   // CLIENT_GONE or TIMEOUT, once it happened
    bool lost_told_ = false;
    bool drain_told_ = false;
    csp_done_fn done_fn_ = nullptr;         // loop: runs once finished() has run
    void* done_user_data_ = nullptr;
    std::list<boost::asio::steady_timer> timers_;
    std::list<std::shared_ptr<Watch>> watches_;
    std::optional<WebSocketOffer> websocket_offer_;  // set before the call is queued
    std::shared_ptr<WebSocketLink> websocket_;       // set by the call's thread; the loop's once it returned
    /// A stream's head, copied when it starts (the handler's reply may change after).
    struct StreamHead {
        HttpStatus status = HttpStatus::ok;
        std::string content_type;
        ResponseFields fields;
        std::string request_id;
    };
    StreamOutbox::Framing stream_framing_;  // the waiter's choice, made with the exchange
    std::unique_ptr<StreamOutbox> stream_;  // set once, before streaming_
    StreamHead stream_head_;                // set with stream_
    bool stream_head_taken_ = false;        // loop
    std::atomic<bool> streaming_{false};
    std::atomic<bool> cut_{false};
    int stream_status_ = 0;
    csp_writable_fn writable_fn_ = nullptr;  // under abort_mutex_
    void* writable_user_data_ = nullptr;
};

} // namespace cspd
