// How an HTTP/1 session waits for answers that come later (see http1_session.hpp): it takes
// over a deferred or blocking handler's call as its PendingCalls, stops parsing behind it,
// keeps reading the transport for the client leaving, gives up with 504 when the answer is
// overdue, and sends the answer, in request order, when it comes.
#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"

#include "serving/loop_context.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/exchange/pending_start.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace cspd {
namespace {
// While an answer is owed, what the client pipelines behind it is kept unparsed up to this;
// past it the socket is left unread (TCP holds the client back) until the answer is sent.
constexpr std::size_t kMaxInputWhileWaiting = 64 * 1024;
}  // namespace

std::shared_ptr<PendingExchange::Waiter> Http1Session::as_waiter() {
    // The base is private: only this class may hand itself out as a waiter (aliasing: same owner).
    return std::shared_ptr<PendingExchange::Waiter>(shared_from_this(), static_cast<PendingExchange::Waiter*>(this));
}

PendingReply* Http1Session::adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    // The pending holds the connection until it is answered or dropped: an answer is owed to it.
    std::shared_ptr<PendingExchange> pending = defer_call(loop_, call, frame, as_waiter());
    if (!pending) return nullptr;
    PendingReply* reply = pending.get();
    owe(std::move(pending));
    return reply;
}

bool Http1Session::run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    std::shared_ptr<PendingExchange> pending =
        queue_blocking_call(loop_, call, frame, as_waiter(), can_carry_websocket());
    if (!pending) return false;
    owe(std::move(pending));
    return true;
}

void Http1Session::answered(PendingExchange& pending, std::optional<int> returned) {
    if (waiting_.get() != &pending || state_ == State::closed || state_ == State::lingering) return;
    if (pending.streaming()) {
        stream_ended(pending, returned);
        return;
    }
    if (std::shared_ptr<WebSocketLink> link = pending.take_websocket()) {
        accepted_later(pending, std::move(link), returned);
        return;
    }
    ResponseFrame frame = pending.frame();
    if (loop_.draining) frame.keep_alive = false;  // as every answer during a drain says
    const std::size_t began = loop_.output.size();
    const CallStatus status = pending.send_answer(returned, frame, loop_.router, loop_.date, loop_.output);
    if (loop_.access) {
        pending.access.count_sent(std::string_view(loop_.output).substr(began));
        log_pending(pending, code(status.sent));
    }
    owe_nothing();
    if (close_after_answer_ || !frame.keep_alive) {
        closing_ = true;
        // Bytes the client sent behind it would be answered with a reset: drain them first.
        if (!work_->pending_input.empty()) linger_on_close_ = true;
    }
    last_request_ = coarse_now_ms();
    if (state_ == State::writing) {
        // Earlier answers still wait for the socket: this one queues behind them, and the write
        // that is waiting goes on from there (resuming once, when everything is out).
        work_->queued.append(loop_.output);
        loop_.output.clear();
        return;
    }
    send_output();
}

void Http1Session::accepted_later(PendingExchange& pending, std::shared_ptr<WebSocketLink> link,
                                  std::optional<int> returned) {
    const std::size_t began = loop_.output.size();
    const CallStatus status = pending.send_websocket_accept(returned, loop_.router, loop_.output);
    if (loop_.access) {
        pending.access.count_sent(std::string_view(loop_.output).substr(began));
        log_pending(pending, code(status.sent));
    }
    owe_nothing();
    work_->upgrade = std::move(link);
    // What the client sent while the call ran is the conversation's first frames. Earlier answers
    // still queued (state writing) go first: the WebSocket's connection takes the queue over.
    const std::string first = std::move(work_->pending_input);
    work_->pending_input.clear();
    hand_over_to_websocket(first);
}

void Http1Session::wait_for_answer() {
    if (state_ == State::waiting) return;
    state_ = State::waiting;
    drained_ = false;  // the answer comes in a later pass
    // The request was copied when its answer was deferred: an idle wait holds no read buffer.
    release_buffer();
    work_->parser.release_memory();
    if (work_->pending_input.size() < kMaxInputWhileWaiting && !transport_.wait_readable(*this)) close();
}

void Http1Session::read_while_waiting() {
    char chunk[4096];
    for (;;) {
        const std::size_t room = std::min(sizeof chunk, kMaxInputWhileWaiting - work_->pending_input.size());
        if (room == 0) return;  // full: leave the rest unread until the answer is out
        const Transport::Moved got = transport_.read(chunk, room);
        if (got.io == Transport::Io::would_block) break;
        if (got.io != Transport::Io::done) {
            close();  // EOF or reset: the client is gone, and the answer with it
            return;
        }
        work_->pending_input.append(chunk, got.bytes);
        last_read_ = coarse_now_ms();
    }
    if (!transport_.wait_readable(*this)) close();
}

void Http1Session::give_up_waiting(const char* why) {
    const std::shared_ptr<const HandlerVersion> version = waiting_->call().version;
    spdlog::warn("handler {}: {}; client {}:{} answered 504", version ? version->describe() : "?", why, address_,
                 port_);
    const std::size_t began = loop_.output.size();
    waiting_->send_timeout(loop_.router, loop_.date, loop_.output);
    if (loop_.access) {
        waiting_->access.count_sent(std::string_view(loop_.output).substr(began));
        log_pending(*waiting_, 504);
    }
    owe_nothing();
    closing_ = true;  // what was pipelined behind it is not answered
    if (!work_->pending_input.empty()) linger_on_close_ = true;  // drained first: a reset would lose the 504
    send_output();
}

void Http1Session::owe(std::shared_ptr<PendingExchange> pending) {
    if (waiting_) {  // parsing stops behind an owed answer: a second one is a bug, not a client's doing
        spdlog::error("client {}:{}: a second answer owed while one is; dropping the first", address_, port_);
        waiting_->drop(CSP_ABORT_CLIENT_GONE);
        owe_nothing();
    }
    waiting_ = std::move(pending);
    if (loop_.slot) bump(loop_.slot->replies_owed);
}

void Http1Session::owe_nothing() {
    if (!waiting_) return;
    waiting_.reset();
    if (loop_.slot) bump(loop_.slot->replies_owed, std::uint64_t(-1));  // one writer: the loop
}

void Http1Session::warn_draining() {
    if (waiting_) waiting_->warn_draining();
}

}  // namespace cspd
