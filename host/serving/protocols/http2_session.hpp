// HTTP/2 on one connection (RFC 9113): h2 chosen by ALPN on the HTTPS port, or h2c with prior
// knowledge on the plain port. nghttp2 is the engine (frames, HPACK, stream states, flow
// control) with no socket of its own: bytes read by the Transport go in through mem_recv,
// frames to send come out through mem_send and leave in one write. Streams are Http2Streams.
//
// Requests complete during one read are routed after nghttp2 has taken the whole read, in
// order: a stream the client reset in the same read costs no routing (the rapid-reset attack
// does no work), and their answers leave together. Each request goes through the same Router
// as HTTP/1's and gets its answer as a typed Response, which this session writes as HEADERS
// (Http2ResponseHead) and DATA frames: the routes do not know the protocol. An answer that comes later is
// a PendingExchange per stream; a stream waiting holds back none of its siblings, and a
// streamed answer is sent under its own stream's flow-control window.
//
// Limits: --h2-max-streams (SETTINGS_MAX_CONCURRENT_STREAMS); --h2-answer-budget, the bytes of
// built answers the connection holds unsent (a client that asks for many large answers and opens
// no window holds that much, not streams × answers: past it, requests wait unrouted, in order,
// until the client takes some); --max-header-size over each
// header list (past it: 431, and a header block whose frames alone run far past it ends the
// connection before it is decoded), --max-body, and token buckets for frames that do no work
// (SETTINGS, PING, PRIORITY, empty DATA) and for streams the client resets: past them, GOAWAY
// ENHANCE_YOUR_CALM. Timeouts (the loop's tick): idle (GOAWAY after --keepalive-timeout with no
// stream), a request that stops arriving (--header-timeout), a client that takes no bytes
// (--send-timeout, whether the socket or the flow-control window is shut), answers owed
// (--handler-timeout, --pending-timeout). A drain sends GOAWAY and finishes open streams.
//
// WebSockets (RFC 8441): SETTINGS_ENABLE_CONNECT_PROTOCOL is advertised; an extended CONNECT
// (:protocol websocket) is routed when its HEADERS arrive, and a stream whose handler accepts
// carries the conversation (Http2WebSocket); a drain closes each with 1001.
//
// Lifetime: as every Connection (shared_ptr, held by its waits and its pending exchanges).
// The nghttp2 session is deleted only with this object, never inside one of its callbacks.
#pragma once

#include "common/token_bucket.hpp"
#include "http/response.hpp"
#include "routing/handler_call.hpp"
#include "routing/router.hpp"
#include "serving/connection.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/protocols/http2_response_head.hpp"
#include "serving/protocols/http2_stream.hpp"
#include "serving/transport/output_queue.hpp"
#include "stats/http2_counters.hpp"

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>


namespace cspd {

class Http2Session final : public Connection, private PendingCalls, private PendingExchange::Waiter {
public:
    /// True when `first_bytes`, the first a client sent on a connection, begin HTTP/2's
    /// connection preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); at least "PRI " must have come.
    static bool begins_preface(std::string_view first_bytes);

    /// Takes over `from`'s transport (HTTP/1's session, which saw the preface or ALPN's h2) and
    /// begins with `first_bytes`, read from it already. Null if there is no memory: close `from`.
    static std::shared_ptr<Http2Session> take_over(Connection& from, std::string_view first_bytes);

    explicit Http2Session(Connection& from) noexcept;
    ~Http2Session() override;

    void start() override;
    void on_tick(std::uint32_t now) override;
    void on_drain() override;
    void warn_draining() override;
    void close() override;

private:
    friend class Http2WebSocket;
    /// nghttp2's callbacks, with this session as their user data.
    struct Callbacks;

    /// nghttp2 with our settings and limits, and our SETTINGS queued.
    bool set_up();
    /// Feeds bytes read to nghttp2, routes what completed, sends what is owed.
    void process(std::string_view input);
    void on_readable() override;
    void on_writable() override;
    void read_now();
    /// Waits for the next bytes (not while writing waits for room: that wait goes on first).
    void read_more();
    /// Pulls frames from nghttp2 and writes them, until it has none or the transport is full.
    void send_frames();
    /// After a write: waits for room, or closes when nothing is left to say; false if closed.
    void after_send();
    /// A GOAWAY for `why` (`error`: RFC 9113 code), then the connection closes once it is out.
    void go_away(H2Goaway why, std::uint32_t error);

    // Streams.
    Http2Stream* stream(std::int32_t id);
    Http2Stream* stream_of(const PendingExchange& pending);
    /// A field of stream `s`'s header list arrived.
    void add_header(Http2Stream& s, nghttp2_rcbuf* name, nghttp2_rcbuf* value);
    void add_body(Http2Stream& s, std::string_view bytes);
    void route_ready();
    /// Routes requests held back by --h2-answer-budget while it has room; true if it routed any.
    bool route_held_back();
    /// Bytes of built answers not yet taken by nghttp2, over every stream.
    std::size_t answer_bytes_held() const;
    void route(Http2Stream& s);
    /// The host answers `s` itself: a refusal.
    void refuse(Http2Stream& s);
    /// Where the answer to one stream goes: its head into the session's Http2ResponseHead (until
    /// submit), its body into the stream.
    class StreamSink final : public ResponseSink {
    public:
        StreamSink(Http2Session& session, Http2Stream& s) : session_(session), stream_(s) {}
        void send(const Response& response, const ResponseFrame& frame) override {
            session_.take_answer(stream_, response, frame);
        }

    private:
        Http2Session& session_;
        Http2Stream& stream_;
    };
    /// The answer for `s`: its HEADERS made, its body's bytes kept to go as DATA; submit(s) queues them.
    void take_answer(Http2Stream& s, const Response& response, const ResponseFrame& frame);
    /// A request refused as malformed (a stream reset with PROTOCOL_ERROR): an access-log line
    /// with status 400, as an HTTP/1 server answers such a request.
    void log_malformed(const Http2Stream& s);
    /// The access log's line for a stream answered (or reset) without being routed.
    void log_unrouted(const Http2Stream& s, const AnswerFacts& facts);
    /// Queues the HEADERS take_answer made for `s`, with DATA to follow if there is a body.
    void submit(Http2Stream& s);
    /// --client-connections: a stream about to open holds a unit of its client's (the first is
    /// the connection's own); false: the client has none left, refuse it.
    bool charge_stream();
    /// A stream gone (or never made): a unit back if more are held than the streams need.
    void uncharge_stream();
    void stream_closed(std::int32_t id, std::uint32_t error);
    /// Where DATA frames of `s` come from: its response's body, then its file (nghttp2's read callback).
    long read_body(Http2Stream& s, std::uint8_t* into, std::size_t room, std::uint32_t& flags);

    // Answers that come later.
    PendingReply* adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept override;
    bool run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept override;
    void answered(PendingExchange& pending, std::optional<int> returned) override;
    void stream_output(PendingExchange& pending) override;
    /// A stream's bytes go as they are, in DATA frames; a HEAD's are none.
    StreamOutbox::Framing stream_framing(const ResponseFrame& frame) const override;
    std::shared_ptr<PendingExchange::Waiter> as_waiter();
    void owe(Http2Stream& s, std::shared_ptr<PendingExchange> pending);
    void owe_nothing(Http2Stream& s);
    /// A streamed answer's bytes wait: they join the stream's DATA, behind its head (`pending`'s,
    /// submitted with the first of them).
    void more_stream_bytes(Http2Stream& s, PendingExchange& pending, std::string&& bytes);
    /// The answer owed to `s` is overdue: 504.
    void give_up_waiting(Http2Stream& s, const char* why);
    /// A streamed answer is cut (it idled, or ignored back-pressure): its handler hears `reason`, the stream is reset.
    void cut_stream(Http2Stream& s, const char* why, int reason);
    /// A stream past one of its timeouts is reset (CANCEL), the others go on; the tick says how
    /// many, once for the connection.
    void reset_stalled(Http2Stream& s, const char* why);
    /// Tells every streamed answer how much of it still waits here.
    void report_stream_room();

    // Limits.
    /// A frame that costs work and answers nothing; false when the client is past its budget.
    bool spend_idle_frame();
    /// The client reset a stream; false when it does so too fast.
    bool spend_reset();
    /// A header block's frame of `length` bytes arrived; false when the block is past any sane size.
    bool header_block_frame(std::size_t length, bool first);
    /// A HEADERS frame on stream `id`: false when `id` is below streams already opened and was
    /// never opened itself (RFC 9113 §5.1.1: skipped ids are closed; nghttp2 lets it pass).
    bool may_open_or_continue(std::int32_t id);
    void count_goaway(H2Goaway why);
    void count_reset_sent(std::uint32_t error);

    // WebSockets over streams, RFC 8441.
    WebSocketChannel* accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                       std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                       std::string& extensions) noexcept override;
    /// A handler may accept `s`'s request as a WebSocket: an extended CONNECT (RFC 8441) this
    /// session can still carry.
    bool can_carry_websocket(const Http2Stream& s) const;
    /// The handler accepted `s` as a WebSocket: its 200 goes, and the stream carries the conversation.
    void start_websocket(Http2Stream& s);
    /// Bytes of a WebSocket stream's DATA: kept until nghttp2 has taken the whole read.
    void websocket_bytes(Http2Stream& s, std::string_view bytes);
    /// Hands what WebSocket streams received in this read to their conversations.
    void feed_websockets();
    /// Hands what `s` received to its conversation, unless our frames wait for the client's window.
    void feed_websocket(Http2Stream& s);
    /// Runs `act` on every WebSocket stream, by id (what it does may close streams).
    template <class Act>
    void for_each_websocket(Act act);
    /// The loop's tick, for each conversation (pings, timeouts).
    void websockets_ticked(std::uint32_t now);
    /// After a write: conversations whose bytes are all out may be written again (on_writable).
    void websockets_drained();
    /// The drain: each conversation closes with 1001.
    void websockets_draining();

    // Access log lines.
    void log_answer(Http2Stream& s, const Routed* routed, int status);

    std::shared_ptr<Http2Session> self() { return std::static_pointer_cast<Http2Session>(shared_from_this()); }

    // Budgets: frames that do no work (SETTINGS, PING, PRIORITY, empty DATA), and streams the
    // client resets. A burst is allowed, then a steady rate. nghttp2's own guards sit behind at twice these.
    static constexpr double kIdleFrameBurst = 1000, kIdleFramesPerSecond = 200;
    static constexpr double kResetBurst = 200, kResetsPerSecond = 100;
    /// HEADERS + CONTINUATION frames of one header block, at most (a flood of tiny ones is cut).
    static constexpr std::size_t kMaxBlockFrames = 64;
    /// A WebSocket stream's client is read while fewer of our bytes than this wait for its window.
    static constexpr std::size_t kWebSocketReadMark = 64 * 1024;

    nghttp2_session* session_ = nullptr;
    std::unordered_map<std::int32_t, std::unique_ptr<Http2Stream>> streams_;
    Http2Stream* looked_up_ = nullptr;  // stream()'s last answer, while that stream lives
    std::vector<std::int32_t> ready_;  // streams whose request completed in this read, in order
    // Complete requests waiting for --h2-answer-budget, in order, from held_back_next_ on (a
    // vector, not a deque: nothing is allocated for a connection that never waits).
    std::vector<std::int32_t> held_back_;
    std::size_t held_back_next_ = 0;
    std::vector<std::int32_t> heard_;  // WebSocket streams that received DATA (or ended) in this read
    std::size_t websockets_ = 0;       // streams carrying a WebSocket
    std::size_t extra_units_ = 0;      // --client-connections units held for streams past the first
    std::vector<std::int32_t> websocket_ids_;  // for_each_websocket's list, kept for its capacity
    Http2Stream* routing_ = nullptr;   // the stream being routed: PendingCalls' calls are its
    OutputQueue queued_;               // frames the transport has not taken yet
    std::size_t owed_ = 0;             // streams waiting for a pending answer
    TokenBucket idle_frames_;  // frames that do no work (see kIdleFrameBurst)
    TokenBucket resets_;       // streams the client resets
    std::array<std::int32_t, 64> opened_{};  // the ids of the streams opened last, a ring
    std::size_t opened_count_ = 0;
    std::size_t block_bytes_ = 0;   // of the header block in progress: its frames so far
    std::size_t block_frames_ = 0;
    // coarse_now_ms() timestamps for the timeouts in on_tick.
    std::uint32_t last_read_ = 0;
    std::uint32_t last_write_ = 0;
    std::uint32_t last_stream_ = 0;  // a stream opened or ended
    std::uint32_t last_data_ = 0;    // a DATA frame went out
    // Stalled streams reset and not yet logged (see on_tick): one line a minute at most.
    struct Stalls {
        unsigned windows = 0, requests = 0;
    } stalls_unsaid_;
    std::uint32_t stalls_said_at_ = 0;
    bool stalls_said_ = false;
    std::uint32_t lingering_since_ = 0;
    Http2ResponseHead head_;         // the HEADERS take_answer made, until submit takes them...
    Http2Stream* head_for_ = nullptr;  // ...for this stream
    HttpStatus head_status_ = HttpStatus::ok;
    std::vector<nghttp2_nv> nv_;     // scratch: the head as nghttp2 takes it (it copies them)
    H2Goaway cut_for_ = H2Goaway::protocol;  // why a callback of ours stopped nghttp2
    bool writing_ = false;           // waiting for room to write
    bool lingering_ = false;         // our last frame is out: reading what still comes until EOF
    bool goaway_submitted_ = false;  // a GOAWAY of ours is counted (one nghttp2 sends alone is a protocol error's)
    bool closed_ = false;
    bool going_away_ = false;        // a GOAWAY is sent: close once every stream is done
    bool close_when_sent_ = false;   // close once what is queued is written
};

}  // namespace cspd
