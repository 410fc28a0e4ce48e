// A WebSocket conversation on one connection (RFC 6455), after the 101 that accepted it: the
// client's frames read through the FrameReader (websocket/), messages reassembled and checked
// (size, UTF-8) and handed to the handler's callbacks on this loop; the handler's messages taken
// from the WebSocketLink's outbox and written; control frames answered; the closing handshake in
// both directions; pings and the idle timeout at the loop's tick. The handler hears of the end
// once, through on_close, whatever ends it. How a conversation ends is websocket_session_end.cpp.
//
// Reads stop while output waits for the socket (a client that does not read its answers is
// not read either). Lifetime as every Connection's: shared_ptr, held by the transport's waits.
#pragma once

#include "serving/connection.hpp"
#include "serving/exchange/websocket_link.hpp"
#include "serving/transport/output_queue.hpp"
#include "websocket/frame_reader.hpp"
#include "websocket/utf8_validator.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

class WebSocketSession final : public Connection,
                               private ws::FrameReader::Sink,
                               public WebSocketLink::Owner {
public:
    /// The conversation `link` takes `from`'s connection over: `queued` (the 101, and anything
    /// before it) is written first, then `first_bytes` (frames that came with the handshake) are read.
    static std::shared_ptr<WebSocketSession> take_over(Connection& from, std::shared_ptr<WebSocketLink> link,
                                                       OutputQueue queued, std::string_view first_bytes);

    WebSocketSession(Connection& from, std::shared_ptr<WebSocketLink> link, OutputQueue queued) noexcept;
    ~WebSocketSession() override;

    /// Bytes the session holds on its own while it is idle (for bench/ and the 1 KiB goal).
    static std::size_t idle_bytes();

    void start() override;
    void on_tick(std::uint32_t now) override;
    void on_drain() override;
    void warn_draining() override {}
    void close() override;

    void link_output() override;

private:
    void on_readable() override;
    void on_writable() override;

    bool on_data_frame(ws::Opcode opcode, bool first, bool fin, bool rsv1, std::uint64_t size) override;
    bool on_data(std::string_view payload) override;
    bool on_data_frame_end(bool fin) override;
    bool on_control(ws::Opcode opcode, std::string_view payload) override;

    void read_now();
    void read_more();
    void process(char* data, std::size_t size);
    /// The peer's close frame: answered (unless ours went first), and the conversation ends.
    bool on_close_frame(std::string_view payload);
    /// Hands a whole message to the handler.
    void deliver();
    /// A compressed message (permessage-deflate) is whole: inflated in place, within the limit, and
    /// checked; false if the connection failed.
    bool inflate();
    /// Fails the connection (RFC 6455 §7.1.7): our close frame with `code`, the handler told, and
    /// the connection closed once the frame is out.
    void fail(std::uint16_t code, std::string_view why);
    /// Begins the closing handshake with `code`: the peer's answer is awaited (kCloseWaitMs at most).
    void begin_close(std::uint16_t code, std::string_view reason);
    /// Appends a control frame of ours behind what is queued, and writes.
    void send_control(ws::Opcode opcode, std::string_view payload);
    /// The handler hears of the end, once: its sends give -1 from then on, and it leaves its topics.
    void tell_closed(int code, std::string_view reason);
    /// Writes what is queued; then reads again, or closes after our last frame.
    void flush();
    /// Runs one of the handler's callbacks on this loop, marked for the crash report; false if it threw.
    template <class Call>
    bool run_callback(const char* which, Call call);

    std::shared_ptr<WebSocketLink> link_;
    OutputQueue queued_;
    ws::FrameReader reader_;
    ws::Utf8Validator utf8_;
    std::string message_;  // the message being reassembled; empty between messages
    std::uint32_t last_read_ = 0;
    std::uint32_t last_write_ = 0;
    std::uint32_t ping_sent_ = 0;      // when our unanswered ping went (0: none out)
    std::uint32_t close_sent_at_ = 0;  // when our close frame went
    bool binary_ = false;              // the message being reassembled is binary
    bool compressed_ = false;          // ... and compressed (permessage-deflate's RSV1)
    bool writing_ = false;             // output waits for room: no reads meanwhile
    bool close_sent_ = false;          // our close frame (or the handler's) is queued or gone
    bool close_after_write_ = false;   // the connection closes once the queue is written
    bool told_ = false;                // on_close ran
    bool closed_ = false;
};

}  // namespace cspd
