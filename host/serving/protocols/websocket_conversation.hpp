// One WebSocket conversation (RFC 6455), after the answer that accepted it, whatever carries it:
// a connection of its own (WebSocketSession, HTTP/1.1's 101) or one HTTP/2 stream (RFC 8441's
// extended CONNECT). The client's frames read through the FrameReader (websocket/), messages
// reassembled and checked (size, UTF-8) and handed to the handler's callbacks on this loop; the
// handler's messages taken from the WebSocketLink's outbox and handed to the carrier; control
// frames answered; the closing handshake in both directions; pings and the idle timeout at the
// loop's tick. The handler hears of the end once, through on_close, whatever ends it.
//
// Lifetime: shared_ptr, held by its carrier; the link points at it weakly. The carrier says when
// it goes (carrier_gone) and is not touched after. Loop thread only.
#pragma once

#include "serving/exchange/websocket_link.hpp"
#include "websocket/frame_reader.hpp"
#include "websocket/utf8_validator.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

struct LoopContext;

class WebSocketConversation final : private ws::FrameReader::Sink,
                                    public WebSocketLink::Owner,
                                    public std::enable_shared_from_this<WebSocketConversation> {
public:
    /// What carries the frames: a connection, or an HTTP/2 stream.
    class Carrier {
    public:
        /// Frames of ours, behind what waits to be written.
        virtual void carry(std::string&& bytes) = 0;
        /// Writes what waits as far as the peer takes it. Once all is out, the carrier ends itself
        /// if the conversation is over (ending()), or else calls sent() and reads on.
        virtual void push() = 0;
        /// Ends at once, with no closing handshake (the peer sees 1006).
        virtual void hang_up() = 0;
        /// The peer, for log lines: "address:port", and the stream if there is one.
        virtual std::string peer() const = 0;

    protected:
        ~Carrier() = default;
    };

    WebSocketConversation(LoopContext& loop, std::shared_ptr<WebSocketLink> link, Carrier& carrier) noexcept;
    ~WebSocketConversation();

    /// Begins: the link points here, `first_bytes` (frames that came with the handshake) are read,
    /// and what the handler sent from its call on is carried.
    void begin(std::string_view first_bytes);
    /// Bytes from the peer; unmasked in place.
    void read(char* data, std::size_t size);
    /// Everything carried is out: the handler's on_writable runs if its outbox has room.
    void sent();
    /// The loop's tick: the close wait, the idle timeout, pings.
    void tick(std::uint32_t now);
    /// The server stops: close 1001 "server stopping", and the peer's answer awaited.
    void drain();
    /// The peer is gone, or the carrier closed: the handler hears 1006 if it heard nothing yet.
    /// The carrier is not touched after this.
    void carrier_gone();
    /// Our last frame is carried: the carrier ends once it is out.
    bool ending() const { return close_after_write_; }

    void link_output() override;
    /// A subscribed topic lost messages across hosts: the handler's on_topic_gap, or 1012 without one.
    void topic_gap(std::string_view topic) override;

    const WebSocketLink& link() const { return *link_; }

private:
    bool on_data_frame(ws::Opcode opcode, bool first, bool fin, bool rsv1, std::uint64_t size) override;
    bool on_data(std::string_view payload) override;
    bool on_data_frame_end(bool fin) override;
    bool on_control(ws::Opcode opcode, std::string_view payload) override;

    /// The peer's close frame: answered (unless ours went first), and the conversation ends.
    bool on_close_frame(std::string_view payload);
    /// Hands a whole message to the handler.
    void deliver();
    /// A compressed message (permessage-deflate) is whole: inflated in place, within the limit, and
    /// checked; false if the conversation failed.
    bool inflate();
    /// Fails the conversation (RFC 6455 §7.1.7): our close frame with `code`, the handler told, and
    /// the carrier ended once the frame is out.
    void fail(std::uint16_t code, std::string_view why);
    /// Begins the closing handshake with `code`: the peer's answer is awaited (kCloseWaitMs at most).
    void begin_close(std::uint16_t code, std::string_view reason);
    /// Carries a control frame of ours behind what is queued.
    void send_control(ws::Opcode opcode, std::string_view payload);
    /// The handler hears of the end, once: its sends give -1 from then on, and it leaves its topics.
    void tell_closed(int code, std::string_view reason);
    void push();
    void hang_up();
    /// Runs one of the handler's callbacks on this loop, marked for the crash report; false if it threw.
    template <class Call>
    bool run_callback(const char* which, Call call);

    LoopContext& loop_;
    std::shared_ptr<WebSocketLink> link_;
    Carrier* carrier_;  // null once it is gone
    ws::FrameReader reader_;
    ws::Utf8Validator utf8_;
    std::string message_;  // the message being reassembled; empty between messages
    std::uint32_t last_read_ = 0;
    std::uint32_t ping_sent_ = 0;      // when our unanswered ping went (0: none out)
    std::uint32_t close_sent_at_ = 0;  // when our close frame went
    bool binary_ = false;              // the message being reassembled is binary
    bool compressed_ = false;          // ... and compressed (permessage-deflate's RSV1)
    bool close_sent_ = false;          // our close frame (or the handler's) is queued or gone
    bool close_after_write_ = false;   // the carrier ends once what waits is written
    bool told_ = false;                // on_close ran
};

}  // namespace cspd
