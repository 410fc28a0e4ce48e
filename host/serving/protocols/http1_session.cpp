// HTTP/1.x on one connection, in the order a connection meets it: reading,
// parsing and answering pipelined requests, and handing over to HTTP/2 or a WebSocket; the time it
// is not parsing or sending; answers that come later; streamed replies; the access log's lines.
#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "http/http1_response.hpp"
#include "serving/access_log.hpp"
#include "serving/block_pool.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/exchange/answer_log.hpp"
#include "serving/exchange/pending_start.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/http2_session.hpp"
#include "serving/protocols/websocket_session.hpp"
#include "stats/shared_stats.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <new>
#include <string>
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
        if (transport_.chose_h2() || (loop_.limits.http2.enabled && Http2Session::begins_preface(input))) {
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
    work_->upgrade = WebSocketLink::accept(request, loop_.limits.websocket.deflate, loop_.inbox, callbacks,
                                           std::move(version), stats, extensions);
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
    Http1Writer sink = writer();
    Routed routed = loop_.router.respond(request, context, sink);
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
    send_refusal(code);
    linger_on_close_ = true;  // the client may still be sending (a refused body, say)
}

void Http1Session::send_refusal(HttpStatus status) {
    const std::size_t began = loop_.output.size();
    writer().send(error_response(status), ResponseFrame{.keep_alive = false});
    if (loop_.access) log_refusal(status, began);
    closing_ = true;
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

// ---- How an HTTP/1 session spends the time it is not parsing or sending:
// the Work it takes from the loop's BlockPool and gives back when it parks, the timeouts the
// loop's tick enforces, the drain, and lingering after a final response.
namespace {
// After an error response, unread input is drained this long before closing, so the
// kernel does not answer it with a reset that could destroy the response in flight.
constexpr std::uint32_t kLingerS = 2;
}  // namespace

// What an idle keep-alive connection costs, with its shared_ptr's count and its ReadWatch entry:
// bench.py measures about 350 bytes of RSS each (nginx: about 500). With make_shared's 16 bytes,
// 200 is the most that fits glibc's 224-byte chunk.
static_assert(sizeof(Http1Session) <= 200, "a parked connection should stay this small: move what only a busy one needs into Work");

std::size_t Http1Session::work_bytes() {
    static_assert(alignof(Work) <= alignof(std::max_align_t), "BlockPool's blocks are aligned for this");
    static_assert(sizeof(Work) <= BlockPool::kSlabBytes / 64, "many Works to a slab");
    return sizeof(Work);
}

void Http1Session::ReleaseWork::operator()(Work* work) const noexcept {
    work->~Work();
    BlockPool::release(work);
}

bool Http1Session::ensure_work() {
    if (work_) return true;
    if (void* block = loop_.work_blocks.allocate()) {
        const ConnectionLimits& limits = loop_.limits;
        // Nothing in Work's construction allocates.
        work_.reset(new (block) Work(
            ParseLimits{limits.max_head_bytes, limits.max_body_bytes, limits.memory_body_bytes, &limits.upload_dir}));
        return true;
    }
    spdlog::error("client {}:{}: no memory for a parser; closing", address_, port_);
    close();
    return false;
}

void Http1Session::park() {
    // Nothing read for a second: what a busy connection keeps for its requests goes back. It
    // still waits for readability as before.
    if (!idle()) return;
    release_buffer();
    work_.reset();
    state_ = State::parked;
}

void Http1Session::linger() {
    release_buffer();
    if (!linger_on_close_) {
        // Nothing unread is expected from the client: close at once, as nginx does.
        close();
        return;
    }
    if (!transport_.shutdown_write()) {
        close();
        return;
    }
    state_ = State::lingering;
    last_write_ = coarse_now_ms();
    if (!transport_.wait_readable(*this)) close();
}

void Http1Session::on_linger_readable() {
    // EOF: the client has seen our close; or an error. Either ends the lingering.
    if (transport_.discard_input() != Transport::Io::would_block || !transport_.wait_readable(*this)) close();
}

void Http1Session::on_drain() {
    // A request that has already reached the socket was sent to a server that looked open:
    // answer it (with Connection: close) rather than drop it. Only a truly idle connection closes now.
    if (idle() && transport_.unread_bytes() == 0) close();
}

bool Http1Session::body_too_slow(std::uint32_t now) {
    Work& work = *work_;
    const std::size_t bytes = work.parser.body_bytes();
    if (!work.body_window_open) {
        work.body_window_open = true;
        work.body_window_ms = now;
        work.body_window_bytes = bytes;
        return false;
    }
    if (!coarse_passed(now, work.body_window_ms, loop_.limits.header_timeout_s)) return false;
    const double seconds = double(now - work.body_window_ms) / 1000;
    const bool slow = double(bytes - work.body_window_bytes) < double(loop_.limits.min_body_rate) * seconds;
    work.body_window_ms = now;
    work.body_window_bytes = bytes;
    return slow;
}

void Http1Session::refuse_slow_body() {
    spdlog::info("client {}:{}: request body arriving slower than --min-body-rate {} B/s; answered 408", address_,
                 port_, loop_.limits.min_body_rate);
    send_refusal(HttpStatus::request_timeout);
    linger_on_close_ = true;  // the client is still sending: a reset could destroy the 408
    send_output();  // may close, and so free, this connection: nothing follows
}

void Http1Session::on_tick(std::uint32_t now) {
    // Every timestamp is a coarse_now_ms() reading: a timeout never fires early, and at most a
    // tick late.
    const ConnectionLimits& config = loop_.limits;
    const auto passed = [now](std::uint32_t since, unsigned seconds) { return coarse_passed(now, since, seconds); };
    if (lane_ == Lane::probe_reserve && state_ != State::writing && passed(last_request_, 1)) {
        close();  // let in past --max-connections for one quick probe, not to stay
        return;
    }
    switch (state_) {
    case State::reading:
    case State::parked:
        if (transport_.handshaking()) {
            if (passed(last_request_, config.header_timeout_s)) {  // a TLS handshake that stalls
                transport_.handshake_timed_out();
                close();
            }
        } else if (work_ && work_->parser.in_body()) {
            if (passed(last_read_, config.header_timeout_s)) close();  // the body stalled
            else if (config.min_body_rate && body_too_slow(now)) refuse_slow_body();
        } else if (mid_request()) {
            if (passed(work_->request_started, config.header_timeout_s)) close();  // slow headers
        } else if (passed(coarse_later(last_request_, last_write_), config.keepalive_timeout_s)) {
            // Idle since the last request or the end of its response, whichever came later.
            close();
        } else if (state_ == State::reading && passed(last_read_, 1)) {
            park();  // nothing read for a second
        }
        break;
    case State::writing:
        if (passed(last_write_, config.send_timeout_s)) close();  // the client stopped reading
        break;
    case State::lingering:
        if (passed(last_write_, kLingerS)) close();
        break;
    case State::waiting: {
        std::uint32_t& since = work_->waiting_since;
        if (waiting_->streaming()) {
            // The head is out: no 504 any more. A stream that says nothing for so long is cut.
            // Its last sign of life is kept fresh here, so a stream may live past the stamps' wrap.
            since = coarse_later(last_write_, since);
            if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s))
                cut_stream("stream wrote nothing within --pending-timeout", CSP_ABORT_TIMEOUT);
        } else if (waiting_->blocking()) {
            if (config.handler_timeout_s > 0 && passed(since, config.handler_timeout_s))
                give_up_waiting("blocking call ran longer than --handler-timeout");
        } else if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s)) {
            give_up_waiting("deferred reply not finished within --pending-timeout");
        }
        break;
    }
    case State::closed: break;
    }
}

// ---- How an HTTP/1 session waits for answers that come later: it takes
// over a deferred or blocking handler's call as its PendingCalls, stops parsing behind it,
// keeps reading the transport for the client leaving, gives up with 504 when the answer is
// overdue, and sends the answer, in request order, when it comes.
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
    Http1Writer sink = writer();
    const CallStatus status = pending.send_answer(returned, frame, loop_.router, sink);
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
    Http1Writer sink = writer();
    const CallStatus status = pending.send_websocket_accept(returned, loop_.router, sink);
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
    Http1Writer sink = writer();
    waiting_->send_timeout(loop_.router, sink);
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

// ---- How an HTTP/1 session sends a streamed reply: the stream is the
// answer it waits for, but its bytes go out as they come, through the same output queue, so
// answers stay in order and a transport that is full holds the writer back (StreamOutbox). When
// the stream ends the session goes on with what was pipelined behind it, as after any answer.
void Http1Session::stream_output(PendingExchange& pending) {
    if (waiting_.get() != &pending || state_ == State::closed || state_ == State::lingering) return;
    if (pending.cut()) {
        cut_stream("the handler ignored back-pressure", CSP_ABORT_CLIENT_GONE);
        return;
    }
    std::string bytes = with_stream_head(pending, pending.stream().take());
    if (bytes.empty()) return;
    pending.access.count_sent(bytes);
    // A HEAD request's stream is its head: the exchange is over once that is out, whatever the
    // handler goes on writing, and the connection goes on with what was pipelined behind it.
    if (pending.frame().head_only) end_after_head(pending);
    send_or_queue(std::move(bytes));
}

Http1Writer Http1Session::writer() { return Http1Writer(loop_.output, loop_.date); }

std::string Http1Session::with_stream_head(PendingExchange& pending, std::string&& body) {
    const std::optional<Response> head = pending.take_stream_head();
    if (!head) return std::move(body);  // every piece but the first goes as it was taken: no copy
    std::string framed;
    write_http1(framed, *head, pending.frame(), loop_.date.now());
    framed.append(body);
    return framed;
}

StreamOutbox::Framing Http1Session::stream_framing(const ResponseFrame& frame) const {
    if (frame.head_only) return StreamOutbox::Framing::none;
    return frame.http10 ? StreamOutbox::Framing::raw : StreamOutbox::Framing::chunked;
}

void Http1Session::end_after_head(PendingExchange& pending) {
    // Its writes now fail; a handler of 2.3 or later also hears why.
    const std::shared_ptr<const HandlerVersion>& version = pending.call().version;
    stream_done(pending, false, version && version->minor() >= 3 ? CSP_ABORT_NO_BODY : CSP_ABORT_CLIENT_GONE);
}

void Http1Session::stream_ended(PendingExchange& pending, std::optional<int> returned) {
    const bool clean = returned && *returned < 400;
    // With the last chunk, when it ended cleanly; with its head, if it ended before that went.
    std::string rest = with_stream_head(pending, pending.stream().take());
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

// ---- An HTTP/1 session's access log lines (--access-log; see http1_session.hpp): one per answer,
// written once the answer is handed to the transport, or, for a pending exchange, once it ends.
void Http1Session::log_routed(const HttpRequest& request, const Routed& routed, std::size_t began,
                              std::uint64_t file_bytes, std::int64_t began_ns) {
    AnswerFacts facts;
    facts.count_sent(std::string_view(loop_.output).substr(began));
    facts.count_parts(0, file_bytes);
    facts.began_ns = began_ns;
    log_routed_answer(loop_, client(), request, routed, facts);
}

void Http1Session::log_pending(PendingExchange& pending, int status, int intended_status) {
    log_pending_answer(loop_, client(), pending, status, intended_status);
}

void Http1Session::log_refusal(HttpStatus status, std::size_t began) {
    AnswerFacts facts;
    facts.status = code(status);
    facts.count_sent(std::string_view(loop_.output).substr(began));
    loop_.access->add(client(), nullptr, facts);
}

}  // namespace cspd
