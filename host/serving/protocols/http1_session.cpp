#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"

#include "common/crash_context.hpp"
#include "http/response.hpp"
#include "serving/loop_context.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/protocols/http2_session.hpp"
#include "serving/protocols/websocket_session.hpp"
#include "websocket/deflate.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <utility>

namespace cspd {
namespace asio = boost::asio;

namespace {
// Parsing pauses once this much output waits, and resumes when it is written:
// a client that pipelines without reading cannot make us buffer without bound.
constexpr std::size_t kOutputHighWater = 256 * 1024;
// The loop's output buffer is given back after a reply that made it larger than this.
constexpr std::size_t kKeepLoopOutput = 256 * 1024;
}  // namespace

Http1Session::~Http1Session() {
    if (waiting_) {
        waiting_->drop(loop_.ending ? CSP_ABORT_DRAINING : CSP_ABORT_CLIENT_GONE, loop_.ending);
        owe_nothing();
    }
    release_buffer();
}

void Http1Session::start() {
    last_request_ = last_read_ = last_write_ = coarse_now_ms();
    read_now();
}

bool Http1Session::ensure_buffer() {
    if (work_->buffer) return true;
    work_->buffer = loop_.buffers.acquire();
    if (work_->buffer) return true;
    spdlog::error("client {}:{}: no memory for a read buffer; closing", address_, port_);
    close();
    return false;
}

void Http1Session::read_now() {
    // With TCP_DEFER_ACCEPT the request has usually arrived with the connection: no wait needed.
    if (!ensure_work() || !ensure_buffer()) return;
    state_ = State::reading;
    const Transport::Moved got = transport_.read(work_->buffer, BufferPool::kBufferSize);
    if (got.io == Transport::Io::would_block) {
        wait_readable();
        return;
    }
    if (got.io != Transport::Io::done) {
        close();  // the client closed, or the connection failed
        return;
    }
    last_read_ = coarse_now_ms();
    drained_ = got.bytes < BufferPool::kBufferSize;
    process({work_->buffer, got.bytes});
}

void Http1Session::wait_readable() {
    // No read is tried first (it would find nothing) and no buffer is held while waiting: the
    // recv after the wake takes one from the pool.
    release_buffer();
    state_ = State::reading;
    if (!transport_.wait_readable(*this)) close();
}

void Http1Session::on_readable() {
    switch (state_) {
    case State::reading:
    case State::parked: read_now(); break;
    case State::lingering: on_linger_readable(); break;
    case State::waiting:
    case State::writing:
        // While an answer is owed (a stream's writes may wait for room meanwhile), what comes
        // is kept for later, and the client leaving is seen.
        if (waiting_) read_while_waiting();
        break;
    case State::closed: break;
    }
}

void Http1Session::on_writable() { flush(); }

void Http1Session::process(std::string_view input) {
    if (!spoke_) {
        // The first bytes say which protocol: ALPN chose h2, or a client with prior knowledge of
        // h2c opens with HTTP/2's preface.
        if (transport_.chose_h2() || (loop_.limits.http2 && Http2Session::begins_preface(input))) {
            hand_over_to_http2(input);
            return;
        }
        spoke_ = true;
    }
    const bool was_mid_request = work_->parser.mid_request();
    HttpParser::Status status = work_->parser.feed(input, *this);
    if (work_->upgrade) {
        hand_over_to_websocket(input.substr(work_->parser.consumed()));
        return;
    }
    if (status == HttpParser::Status::paused) {
        // Output is at its high-water mark: keep the rest until it has been written.
        work_->pending_input.assign(input.substr(work_->parser.consumed()));
        work_->parser.resume();
    } else if (status == HttpParser::Status::stopped) {
        const std::string_view rest = input.substr(work_->parser.consumed());
        if (waiting_ && !rest.empty()) {
            // Behind a request whose answer is owed: kept, as what comes while it is waited for is.
            // (A WebSocket a blocking call accepts reads them; otherwise they are drained at the close.)
            work_->pending_input.assign(rest);
        } else if (!rest.empty()) {
            linger_on_close_ = true;  // bytes after a "Connection: close" request: drained before closing
        }
    } else if (status != HttpParser::Status::ok && status != HttpParser::Status::stopped) {
        on_parse_failure(status);
    }
    if (work_->parser.mid_request() && !was_mid_request) work_->request_started = coarse_now_ms();
    send_output();
}

void Http1Session::hand_over_to_http2(std::string_view first_bytes) {
    const std::shared_ptr<Connection> keep = shared_from_this();  // the loop's set may hold the last reference
    state_ = State::closed;  // done: its transport is the HTTP/2 session's now
    if (!Http2Session::take_over(*this, first_bytes)) {
        spdlog::error("client {}:{}: no memory for an HTTP/2 session; closing", address_, port_);
        transport_.close();
    }
    release_buffer();  // after: `first_bytes` were in it
}

bool Http1Session::can_carry_websocket() const {
    // A connection let in past --max-connections for a probe serves that one request.
    return work_ && !work_->upgrade && lane_ != Lane::probe_reserve && !loop_.draining;
}

WebSocketChannel* Http1Session::accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                                std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                                std::string& extensions) noexcept {
    if (!can_carry_websocket()) return nullptr;
    try {
        std::optional<std::string> deflate;
        if (loop_.limits.ws_deflate) deflate = ws::accept_deflate(request);
        work_->upgrade =
            std::make_shared<WebSocketLink>(loop_.inbox, callbacks, std::move(version), stats, deflate.has_value());
        extensions = deflate.value_or(std::string());
    } catch (const std::bad_alloc&) {
        work_->upgrade.reset();
        return nullptr;
    }
    return work_->upgrade.get();
}

void Http1Session::hand_over_to_websocket(std::string_view first_bytes) {
    const std::shared_ptr<Connection> keep = shared_from_this();  // the loop's set may hold the last reference
    state_ = State::closed;  // done: its transport is the WebSocket's now
    OutputQueue queued = std::move(work_->queued);
    queued.append(loop_.output);  // the 101, behind anything still queued before it
    loop_.output.clear();
    if (!WebSocketSession::take_over(*this, std::move(work_->upgrade), std::move(queued), first_bytes)) {
        spdlog::error("client {}:{}: no memory for a WebSocket session; closing", address_, port_);
        transport_.close();
    }
    release_buffer();  // after: `first_bytes` were in it
}

void Http1Session::send_output() {
    // Responses were built in the loop's output buffer. Usually they all go at once and this
    // connection never holds an output buffer of its own; what the socket does not take is queued.
    std::string& out = loop_.output;
    const OutputQueue::Written written = work_->queued.send(transport_, out);
    out.clear();
    if (out.capacity() > kKeepLoopOutput) std::string().swap(out);
    if (after_write(written)) resume();
}

std::size_t Http1Session::pending_output() const {
    return (work_ ? work_->queued.size() : 0) + loop_.output.size();
}

SinkAction Http1Session::on_request(const HttpRequest& request) {
    // Only whole requests count as activity: stray bytes (bare CRLFs) must not keep a connection open.
    last_request_ = coarse_now_ms();
    work_->body_window_open = false;  // the next body is timed afresh
    // A connection let in past --max-connections for a probe serves that one request.
    const bool keep_alive = request.keep_alive && !loop_.draining && lane_ != Lane::probe_reserve;
    const RequestContext context{client(), keep_alive, this};
    std::string& out = loop_.output;
    // A crash sends this client what is built for it and a 500 -- only when nothing older is still
    // queued (unsent leftovers, a file being streamed), which the 500 would overtake.
    struct ForgetCrashClient {
        ~ForgetCrashClient() { set_crash_client(-1, false); }
    } forget;
    if (work_->queued.empty()) set_crash_client(transport_.native_handle(), request.head, &out);
    const std::size_t answer_began = out.size();
    const std::int64_t began_ns = loop_.access ? monotonic_now_ns() : 0;
    Routed routed = loop_.router.respond(request, context, out);
    if (routed.pending) {
        // Parsing stops here: what follows waits, unparsed, for this answer (answers go in order).
        if (waiting_) waiting_->access.began_ns = began_ns;
        work_->waiting_since = coarse_now_ms();
        close_after_answer_ = !context.keep_alive;
        return close_after_answer_ ? SinkAction::stop : SinkAction::pause;
    }
    if (loop_.access) log_routed(request, routed, answer_began, routed.body_file.size, began_ns);
    if (work_->upgrade) return SinkAction::stop;  // the connection is the WebSocket's from here on
    if (routed.body_file.is_open()) {
        // What is in the output so far goes first, then the file; later responses queue behind them.
        work_->queued.append_file(out, std::move(routed.body_file));
        out.clear();
    }
    if (!context.keep_alive || routed.close_after) {
        closing_ = true;
        return SinkAction::stop;
    }
    return pending_output() >= kOutputHighWater ? SinkAction::pause : SinkAction::proceed;
}

void Http1Session::on_continue_expected() { loop_.output.append("HTTP/1.1 100 Continue\r\n\r\n"); }

void Http1Session::on_parse_failure(HttpParser::Status status) {
    HttpStatus code = HttpStatus::bad_request;
    switch (status) {
    case HttpParser::Status::head_too_large: code = HttpStatus::header_fields_too_large; break;
    case HttpParser::Status::uri_too_long: code = HttpStatus::uri_too_long; break;
    case HttpParser::Status::bad_version: code = HttpStatus::http_version_not_supported; break;
    case HttpParser::Status::body_too_large: code = HttpStatus::content_too_large; break;
    case HttpParser::Status::unknown_coding: code = HttpStatus::not_implemented; break;
    case HttpParser::Status::no_room:
        code = HttpStatus::insufficient_storage;
        spdlog::warn("client {}:{}: {}; answered 507", address_, port_, work_->parser.error_reason());
        break;
    case HttpParser::Status::spill_failed:
        code = HttpStatus::service_unavailable;
        spdlog::error("client {}:{}: {}; answered 503", address_, port_, work_->parser.error_reason());
        break;
    case HttpParser::Status::upgrade:
        // The request before the upgrade was answered; we speak no other protocol.
        closing_ = true;
        return;
    default: spdlog::debug("client {}:{}: bad request: {}", address_, port_, work_->parser.error_reason()); break;
    }
    const std::size_t began = loop_.output.size();
    append_error(loop_.output, code, loop_.date.now(), false, false);
    if (loop_.access) log_refusal(code, began);
    closing_ = true;
    linger_on_close_ = true;  // the client may still be sending (a refused body, say)
}

bool Http1Session::after_write(OutputQueue::Written written) {
    if (written.bytes > 0) last_write_ = coarse_now_ms();
    switch (written.progress) {
    case OutputQueue::Progress::done: return true;
    case OutputQueue::Progress::would_block: wait_writable(); return false;
    case OutputQueue::Progress::file_shrank:
        spdlog::warn("client {}:{}: static file shrank while being sent; closing", address_, port_);
        break;
    case OutputQueue::Progress::failed: break;
    }
    close();
    return false;
}

void Http1Session::flush() {
    if (state_ == State::closed) return;
    if (after_write(work_->queued.write_to(transport_))) resume();
}

void Http1Session::wait_writable() {
    drained_ = false;  // the transport is looked at again in a later pass
    state_ = State::writing;
    if (!transport_.wait_writable(*this)) close();
}

void Http1Session::resume() {
    if (waiting_) {
        // A stream's writer may be waiting for the room this write made.
        if (waiting_->streaming()) waiting_->stream_room(work_->queued.size());
        if (waiting_ && state_ != State::closed) wait_for_answer();
        return;
    }
    if (closing_ || (loop_.draining && !mid_request() && work_->pending_input.empty())) {
        linger();
        return;
    }
    if (!work_->pending_input.empty()) {
        // Kept in a member while it is parsed: a request in it may wait for its answer.
        if (!work_->replay) work_->replay = std::make_unique<std::string>();
        *work_->replay = std::move(work_->pending_input);
        work_->pending_input.clear();
        state_ = State::reading;
        process(*work_->replay);  // may pause again, stashing what is left
        return;
    }
    // The socket was emptied by a recv in this same loop pass, so anything that comes later
    // brings a new readiness event: wait for it rather than try a recv that finds nothing.
    // Otherwise (a full buffer, or an answer that came later) read at once.
    if (std::exchange(drained_, false)) {
        wait_readable();
        return;
    }
    // Posted, not called: a client that keeps the buffer full must not deepen the stack.
    state_ = State::reading;
    asio::post(loop_.io, [self = self()] {
        if (self->state_ == State::reading || self->state_ == State::parked) self->read_now();
    });
}

void Http1Session::release_buffer() {
    if (work_ && work_->buffer) {
        loop_.buffers.release(work_->buffer);
        work_->buffer = nullptr;
    }
}

void Http1Session::close() {
    if (state_ == State::closed) return;
    const std::shared_ptr<Connection> keep = shared_from_this();  // the loop's set may hold the last reference
    state_ = State::closed;
    if (waiting_) {
        // nginx's 499: the client left (or the server stopped) before its answer.
        if (loop_.access) log_pending(*waiting_, 499, waiting_->streaming() ? waiting_->stream_status() : 0);
        waiting_->drop(loop_.ending ? CSP_ABORT_DRAINING : CSP_ABORT_CLIENT_GONE, loop_.ending);
        owe_nothing();
    }
    transport_.close();
}

}  // namespace cspd
