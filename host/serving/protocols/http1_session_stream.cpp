// How an HTTP/1 session sends a streamed reply (see http1_session.hpp): the stream is the
// answer it waits for, but its bytes go out as they come, through the same output queue, so
// answers stay in order and a transport that is full holds the writer back (StreamOutbox). When
// the stream ends the session goes on with what was pipelined behind it, as after any answer.
#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"

#include "serving/loop_context.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

void Http1Session::stream_output(PendingExchange& pending) {
    if (waiting_.get() != &pending || state_ == State::closed || state_ == State::lingering) return;
    if (pending.cut()) {
        cut_stream("the handler ignored back-pressure", CSP_ABORT_CLIENT_GONE);
        return;
    }
    std::string bytes = pending.stream().take();
    if (bytes.empty()) return;
    pending.access.count_sent(bytes);
    // A HEAD request's stream is its head: the exchange is over once that is out, whatever the
    // handler goes on writing, and the connection goes on with what was pipelined behind it.
    if (pending.frame().head_only) end_after_head(pending);
    send_or_queue(std::move(bytes));
}

void Http1Session::end_after_head(PendingExchange& pending) {
    // Its writes now fail; a handler of 2.3 or later also hears why.
    const std::shared_ptr<const HandlerVersion>& version = pending.call().version;
    stream_done(pending, false, version && version->minor() >= 3 ? CSP_ABORT_NO_BODY : CSP_ABORT_CLIENT_GONE);
}

void Http1Session::stream_ended(PendingExchange& pending, std::optional<int> returned) {
    const bool clean = returned && *returned < 400;
    std::string rest = pending.stream().take();  // with the last chunk, when it ended cleanly
    pending.access.count_sent(rest);
    if (!clean) {
        const std::shared_ptr<const HandlerVersion>& version = pending.call().version;
        spdlog::info("handler {}: stream to {}:{} cut short", version ? version->describe() : "?", address_, port_);
    }
    stream_done(pending, !clean);
    send_or_queue(std::move(rest));
}

void Http1Session::stream_done(PendingExchange& pending, bool cut_short, int abort_reason) {
    const ResponseFrame frame = pending.frame();  // the pending may go with owe_nothing()
    pending.count_stream(loop_.router);
    if (loop_.access) log_pending(pending, pending.stream_status());
    if (abort_reason) waiting_->drop(abort_reason);
    owe_nothing();
    last_request_ = coarse_now_ms();
    // HTTP/1.0 bodies end with the close; a stream cut short ends without its last chunk, and
    // the client learns it is incomplete from the close.
    if (cut_short || frame.http10 || !frame.keep_alive || close_after_answer_ || loop_.draining) {
        closing_ = true;
        if (!work_->pending_input.empty()) linger_on_close_ = true;
    }
}

void Http1Session::send_or_queue(std::string&& bytes) {
    if (state_ == State::writing) {
        // Earlier bytes still wait for the socket: these queue behind them, and the write that
        // waits goes on from there.
        work_->queued.append_owned(std::move(bytes));
        if (waiting_ && waiting_->streaming()) waiting_->stream_room(work_->queued.size());
        return;
    }
    if (after_write(work_->queued.send_owned(transport_, std::move(bytes)))) resume();
}

void Http1Session::cut_stream(const char* why, int reason) {
    const std::shared_ptr<const HandlerVersion> version = waiting_->call().version;
    spdlog::warn("handler {}: {}; stream to {}:{} cut", version ? version->describe() : "?", why, address_, port_);
    if (loop_.access) log_pending(*waiting_, waiting_->stream_status());  // what was sent of it
    waiting_->drop(reason);
    owe_nothing();
    close();
}

}  // namespace cspd
