// HTTP/1.1 (and 1.0) on one connection: read -> parse -> route -> write, keep-alive and
// pipelining (answers leave in request order, a whole read's worth in one write), timeouts via
// the loop's tick. The bytes move through the connection's Transport; the session is the
// protocol, and its parser (http/parser) is an engine with no socket of its own.
//
// Reads: into a buffer lent by the loop, tried at once when bytes are likely there (a new
// connection, a full buffer last time), else once the transport is readable; between requests
// the session waits in the loop's level-triggered set and holds no buffer. One that
// has read nothing for a second (seen at the loop's once-a-second tick) is parked: it also
// gives back its Work (the parser, the output queue, the buffer). A parked connection is about
// 200 bytes. The tick also enforces the timeouts, and the drain closes what is idle.
//
// Answers that come later (a deferred reply, a blocking handler's call): the session waits
// for them in request order. Parsing stops after such a request; what follows it is kept
// unparsed, the request itself was copied for the call, and the transport is only read for
// the client going away. A streamed reply is such an answer whose bytes are sent as they come,
// until it ends.
#pragma once

#include "http/http1_response.hpp"
#include "http/parser.hpp"
#include "http/status.hpp"
#include "routing/access_log_line.hpp"
#include "routing/handler_call.hpp"
#include "routing/router.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/connection.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/exchange/websocket_link.hpp"
#include "serving/transport/output_queue.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cspd {

class Http1Session final : public Connection,
                           private RequestSink,
                           private PendingCalls,
                           private PendingExchange::Waiter {
public:
    /// A request that is already there is answered without waiting for readiness.
    Http1Session(LoopContext& loop, int fd, const boost::asio::ip::tcp::endpoint& peer,
                 Lane lane = Lane::public_port, bool socket_v6 = false) noexcept
        : Connection(loop, fd, peer, lane, socket_v6) {}
    ~Http1Session() override;

    /// The size of the block a session takes from LoopContext::work_blocks while it is busy.
    static std::size_t work_bytes();

    void start() override;
    void on_tick(std::uint32_t now) override;
    void on_drain() override;
    void warn_draining() override;
    void close() override;

private:
    enum class State : std::uint8_t {
        reading,    ///< waiting for readability (in the loop's ReadWatch), or reading now
        parked,     ///< the same, after a second with nothing read: its Work given back too
        writing,    ///< output waits for the transport to take it
        lingering,  ///< final response sent, reading and discarding until EOF
        waiting,    ///< for an answer that comes later; the transport is read for the client leaving
        closed,
    };

    // TransportUser: one way in for readiness, whatever the session is doing.
    void on_readable() override;
    void on_writable() override;

    SinkAction on_request(const HttpRequest& request) override;
    void on_continue_expected() override;
    PendingReply* adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept override;
    bool run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept override;
    WebSocketChannel* accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                       std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                       std::string& extensions) noexcept override;
    /// The answer came (on the loop): send it and go on with what was read behind it.
    void answered(PendingExchange& pending, std::optional<int> returned) override;
    /// A stream's bytes wait: send them (or queue them behind a write that waits), its head first.
    void stream_output(PendingExchange& pending) override;
    /// HTTP/1.1 chunks a stream; HTTP/1.0's ends with the close; a HEAD's has no body.
    StreamOutbox::Framing stream_framing(const ResponseFrame& frame) const override;
    /// Writes HTTP/1 into the loop's output.
    Http1Writer writer();
    /// `body`, a stream's bytes just taken, behind the stream's head if that has not gone yet.
    std::string with_stream_head(PendingExchange& pending, std::string&& body);
    /// The error `status` (a request refused before it could be routed), and the connection closes.
    void send_refusal(HttpStatus status);
    std::shared_ptr<PendingExchange::Waiter> as_waiter();
    /// The stream ended: its last bytes go, then what was read behind it.
    void stream_ended(PendingExchange& pending, std::optional<int> returned);
    /// A HEAD request's stream sent its head: the exchange ends, its handler is told no body is read.
    void end_after_head(PendingExchange& pending);
    /// A stream's exchange is over (`cut_short`: without its end): counted, owed no more (its
    /// handler told `abort_reason`, if any), and the connection closes after it when it must.
    void stream_done(PendingExchange& pending, bool cut_short, int abort_reason = 0);
    /// A stream cannot go on (it idled, or ignored back-pressure): its handler is told `reason`
    /// (CSP_ABORT_*), and the connection closes.
    void cut_stream(const char* why, int reason);
    /// Sends `bytes` now, or queues them behind a write that waits for the transport.
    void send_or_queue(std::string&& bytes);
    /// Waits for the answer, reading what the client sends meanwhile (to see it leave).
    void wait_for_answer();
    void read_while_waiting();
    /// The answer is overdue: 504, and the connection closes after it.
    void give_up_waiting(const char* why);
    /// An answer is owed from now on (counted for /metrics), or no longer.
    void owe(std::shared_ptr<PendingExchange> pending);
    void owe_nothing();

    // With --access-log, a line for each answer.
    /// The line for an answer just built in the loop's output from `began` on (and `file_bytes` from a file).
    void log_routed(const HttpRequest& request, const Routed& routed, std::size_t began, std::uint64_t file_bytes,
                    std::int64_t began_ns);
    /// The line for a pending exchange that ends: `status` sent (499: the client left first).
    void log_pending(PendingExchange& pending, int status, int intended_status = 0);
    /// The line for an answer the session made itself (a parse failure, a 408), from `began` on.
    void log_refusal(HttpStatus status, std::size_t began);

    void read_now();
    /// Waits for readability without a read first, then read_now().
    void wait_readable();
    void park();
    /// True when the body in progress came slower than --min-body-rate over the last window.
    bool body_too_slow(std::uint32_t now);
    /// 408, then close: the client sends its body too slowly to keep its place.
    void refuse_slow_body();
    void process(std::string_view input);
    /// The client speaks HTTP/2: an Http2Session takes the connection over, `first_bytes` first.
    void hand_over_to_http2(std::string_view first_bytes);
    /// The handler accepted a WebSocket: once the 101 is queued, a WebSocketSession takes the
    /// connection over, `first_bytes` (frames sent right behind the handshake) first.
    void hand_over_to_websocket(std::string_view first_bytes);
    /// A handler may accept this request as a WebSocket: the connection can carry one.
    bool can_carry_websocket() const;
    /// A blocking handler's call accepted a WebSocket: the 101, then the hand-over with what the
    /// client sent meanwhile.
    void accepted_later(PendingExchange& pending, std::shared_ptr<WebSocketLink> link, std::optional<int> returned);
    void on_parse_failure(HttpParser::Status status);
    bool ensure_buffer();
    /// Makes the Work a parked session gave back; false (closed) if there is no memory.
    bool ensure_work();
    void send_output();
    void flush();
    /// After a write: wait for room, go on, or close; false if the connection closed.
    bool after_write(OutputQueue::Written written);
    void wait_writable();
    /// All output written: go on reading, or close.
    void resume();
    void linger();
    void on_linger_readable();
    void release_buffer();
    std::shared_ptr<Http1Session> self() { return std::static_pointer_cast<Http1Session>(shared_from_this()); }
    std::size_t pending_output() const;
    bool mid_request() const { return work_ && work_->parser.mid_request(); }
    bool idle() const {
        return (state_ == State::reading || state_ == State::parked) && pending_output() == 0 && !mid_request() &&
               (!work_ || work_->pending_input.empty()) && !waiting_;
    }

    // What a session needs only while it serves requests, in a block of the loop's BlockPool.
    // Parking frees it, and the next read makes it again.
    struct Work {
        explicit Work(const ParseLimits& limits) : parser(limits) {}
        HttpParser parser;
        char* buffer = nullptr;               // lent by the loop while reading
        std::string pending_input;            // bytes read but not parsed yet (after a pause)
        std::unique_ptr<std::string> replay;  // pending_input being parsed: requests may point into it
        OutputQueue queued;                   // what the transport has not taken yet (usually nothing)
        std::uint32_t request_started = 0;    // first bytes of the current request (header timeout)
        std::uint32_t waiting_since = 0;      // when the answer began to be owed
        // The request body's rate (--min-body-rate): what had come when the current window began.
        std::uint32_t body_window_ms = 0;
        std::size_t body_window_bytes = 0;
        bool body_window_open = false;
        std::shared_ptr<WebSocketLink> upgrade;  // the WebSocket the last request's handler accepted
    };
    struct ReleaseWork {
        void operator()(Work* work) const noexcept;
    };

    std::unique_ptr<Work, ReleaseWork> work_;  // null while parked
    std::shared_ptr<PendingExchange> waiting_;     // the answer that comes later, for the last request parsed
    State state_ = State::reading;
    bool closing_ = false;             // close once output is written
    bool linger_on_close_ = false;     // unread input may follow: drain before closing
    bool close_after_answer_ = false;  // the request waited for asked to close
    // The last read, in this loop pass, took less than a buffer: the transport had nothing more,
    // so any later bytes bring a new readiness event (resume() waits for it).
    bool drained_ = false;
    bool spoke_ = false;  // the first bytes were HTTP/1's: no hand-over to HTTP/2 any more
    // coarse_now_ms() timestamps for the timeouts in on_tick.
    std::uint32_t last_request_ = 0;  // last complete request (keep-alive idle timeout)
    std::uint32_t last_read_ = 0;     // last bytes in (parking, stalled bodies)
    std::uint32_t last_write_ = 0;    // last bytes out, or when lingering began
};

}  // namespace cspd
