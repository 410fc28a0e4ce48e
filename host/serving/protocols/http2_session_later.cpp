// How an HTTP/2 session waits for answers that come later (see http2_session.hpp): each stream
// whose handler deferred, runs blocking or streams has its own PendingExchange, and its
// siblings go on meanwhile. A streamed answer's bytes join its stream's DATA under that
// stream's window; what waits here counts toward the handler's back-pressure. Also: the
// access log lines of its streams.
#include "serving/protocols/http2_session.hpp"

#include "common/clocks.hpp"
#include "serving/access_log.hpp"
#include "serving/exchange/pending_start.hpp"
#include "serving/loop_context.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

std::shared_ptr<PendingExchange::Waiter> Http2Session::as_waiter() {
    // The base is private: only this class may hand itself out as a waiter (aliasing: same owner).
    return std::shared_ptr<PendingExchange::Waiter>(shared_from_this(), static_cast<PendingExchange::Waiter*>(this));
}

PendingReply* Http2Session::adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    if (!routing_) return nullptr;
    std::shared_ptr<PendingExchange> pending = defer_call(loop_, call, frame, as_waiter());
    if (!pending) return nullptr;
    PendingReply* reply = pending.get();
    owe(*routing_, std::move(pending));
    return reply;
}

bool Http2Session::run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    if (!routing_) return false;
    std::shared_ptr<PendingExchange> pending =
        queue_blocking_call(loop_, call, frame, as_waiter(), can_carry_websocket(*routing_));
    if (!pending) return false;
    owe(*routing_, std::move(pending));
    return true;
}

void Http2Session::owe(Http2Stream& s, std::shared_ptr<PendingExchange> pending) {
    s.pending = std::move(pending);
    ++owed_;
    if (loop_.slot) bump(loop_.slot->replies_owed);
}

void Http2Session::owe_nothing(Http2Stream& s) {
    if (!s.pending) return;
    s.pending.reset();
    --owed_;
    if (loop_.slot) bump(loop_.slot->replies_owed, std::uint64_t(-1));  // one writer: the loop
}

void Http2Session::answered(PendingExchange& pending, std::optional<int> returned) {
    Http2Stream* s = closed_ ? nullptr : stream_of(pending);
    if (!s) return;
    if (pending.streaming()) {
        const bool clean = returned && *returned < 400;
        std::string rest = pending.stream().take();
        pending.access.count_sent(rest);
        pending.count_stream(loop_.router);
        if (loop_.access) log_answer(*s, nullptr, pending.stream_status());
        s->stream_ended = true;
        owe_nothing(*s);
        more_stream_bytes(*s, std::move(rest));
        if (!clean) {
            // Cut short: the client learns the body is incomplete from the reset (HTTP/1: the close).
            spdlog::info("stream {} to {}:{} cut short by its handler", s->id, address_, port_);
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        }
        send_frames();
        return;
    }
    std::shared_ptr<WebSocketLink> link = pending.take_websocket();
    if (link && close_when_sent_) {
        // The connection closes once what is queued is out: nothing could carry the conversation.
        link->never_carried(loop_.slot);
        owe_nothing(*s);
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
        s->head_submitted = true;
        send_frames();
        return;
    }
    const CallStatus status = link ? pending.send_websocket_accept(returned, loop_.router, s->response)
                                   : pending.send_answer(returned, pending.frame(), loop_.router, loop_.date, s->response);
    if (loop_.access) {
        pending.access.count_sent(s->response);
        log_answer(*s, nullptr, code(status.sent));
    }
    owe_nothing(*s);
    if (link) {
        // A blocking handler's call accepted it: the stream carries the conversation from here on,
        // what the client sent meanwhile first.
        s->upgrade = std::move(link);
        start_websocket(*s);
    } else {
        submit(*s);
    }
    send_frames();
}

void Http2Session::stream_output(PendingExchange& pending) {
    Http2Stream* s = closed_ ? nullptr : stream_of(pending);
    if (!s) return;
    if (pending.cut()) {
        cut_stream(*s, "the handler ignored back-pressure", CSP_ABORT_CLIENT_GONE);
        send_frames();
        return;
    }
    std::string bytes = pending.stream().take();
    if (bytes.empty()) return;
    pending.access.count_sent(bytes);
    if (pending.frame().head_only) {
        // A HEAD request's stream is its head: the exchange is over once that is out.
        s->stream_ended = true;
        pending.count_stream(loop_.router);
        if (loop_.access) log_answer(*s, nullptr, pending.stream_status());
        const std::shared_ptr<const HandlerVersion>& version = pending.call().version;
        s->pending->drop(version && version->minor() >= 3 ? CSP_ABORT_NO_BODY : CSP_ABORT_CLIENT_GONE);
        owe_nothing(*s);
    }
    more_stream_bytes(*s, std::move(bytes));
    send_frames();
}

void Http2Session::more_stream_bytes(Http2Stream& s, std::string&& bytes) {
    if (!s.head_submitted) {
        if (bytes.empty()) return;
        s.response = std::move(bytes);  // the head, and what the handler wrote before streaming
        submit(s);
        return;
    }
    s.append_output(std::move(bytes));
    if (s.data_deferred) {
        s.data_deferred = false;
        nghttp2_session_resume_data(session_, s.id);
    }
}

void Http2Session::report_stream_room() {
    if (owed_ == 0) return;
    for (auto& [id, s] : streams_) {
        if (!s->pending || !s->pending->streaming()) continue;
        // What waits for this stream's window, and what the socket has not taken of anything.
        s->pending->stream_room(s->response.size() - s->sent + queued_.size());
        if (closed_) return;
    }
}

void Http2Session::give_up_waiting(Http2Stream& s, const char* why) {
    const std::shared_ptr<const HandlerVersion> version = s.pending->call().version;
    spdlog::warn("handler {}: {}; client {}:{} stream {} answered 504", version ? version->describe() : "?", why,
                 address_, port_, s.id);
    s.response.clear();
    s.pending->send_timeout(loop_.router, loop_.date, s.response);
    if (loop_.access) {
        s.pending->access.count_sent(s.response);
        log_answer(s, nullptr, 504);
    }
    owe_nothing(s);
    submit(s);
}

void Http2Session::cut_stream(Http2Stream& s, const char* why, int reason) {
    const std::shared_ptr<const HandlerVersion> version = s.pending->call().version;
    spdlog::warn("handler {}: {}; stream {} to {}:{} reset", version ? version->describe() : "?", why, s.id, address_,
                 port_);
    if (loop_.access) log_answer(s, nullptr, s.pending->stream_status());
    s.pending->drop(reason);
    owe_nothing(s);
    s.stream_ended = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
}

void Http2Session::log_answer(Http2Stream& s, const Routed* routed, int status) {
    char id_text[RequestId::kMaxText];
    if (routed) {
        AnswerFacts facts;
        facts.status = status;
        facts.count_sent(s.response);
        const std::uint64_t file_bytes = routed->body_file.is_open() && !s.head_request ? routed->body_file.size : 0;
        facts.bytes += file_bytes;
        facts.body_bytes += file_bytes;
        facts.began_ns = s.began_ns;
        facts.responder = routed->responder;
        if (routed->handler) {
            facts.handler = routed->handler->name();
            facts.handler_hash = routed->handler->file().content_hash;
        }
        facts.cached = routed->cached;
        facts.request_id = routed->request_id_header.empty() ? routed->id.format(id_text) : routed->request_id_header;
        HttpRequest request;
        request.method = s.method;
        request.target = s.path;
        request.headers = s.headers;
        request.http_major = 2;
        request.http_minor = 0;
        loop_.access->add(client(), &request, facts);
        return;
    }
    if (s.pending) log_pending_answer(loop_, client(), *s.pending, status);
}

}  // namespace cspd
