// A WebSocket conversation carried by one HTTP/2 stream (RFC 8441): the client opened it with an
// extended CONNECT (:protocol websocket), the handler accepted, a 200 went out, and from then on
// the stream's DATA frames carry the WebSocket frames both ways, under the stream's flow-control
// window. Our END_STREAM ends it in order once our last frame is out (then RST_STREAM NO_ERROR
// if the client's side is still open: the server closes first, as over TCP); the client's
// END_STREAM without a closing handshake, or a reset, is the conversation's 1006.
//
// Owned by its Http2Stream; loop thread only. Frames the client sent are read after nghttp2 has
// taken the whole read, never inside nghttp2's callbacks (so the conversation may send at once).
#pragma once

#include "serving/protocols/websocket_conversation.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace cspd {

class Http2Session;
struct Http2Stream;

class Http2WebSocket final : public WebSocketConversation::Carrier {
public:
    /// What waits for one stream's window, at most: past it the peer is not reading (our pongs and
    /// close frames are not bounded by the handler's outbox), and the stream is reset.
    static constexpr std::size_t kMaxWaiting = 16 * 1024 * 1024;

    Http2WebSocket(Http2Session& session, Http2Stream& stream) noexcept : session_(session), stream_(stream) {}
    ~Http2WebSocket();
    Http2WebSocket(const Http2WebSocket&) = delete;
    Http2WebSocket& operator=(const Http2WebSocket&) = delete;

    /// The conversation `link` accepted will be carried here; throws std::bad_alloc.
    void attach(std::shared_ptr<WebSocketLink> link);
    /// The conversation begins, with what the client sent after its HEADERS.
    void begin(std::string_view first_bytes);
    /// Bytes of the client's DATA frames (read after nghttp2 took them).
    void read(std::string& bytes);
    /// All our bytes are out (the stream's and the socket's): the handler may write again.
    void drained();
    /// The client ended its side (END_STREAM): without a closing handshake, a 1006.
    void peer_ended();
    void tick(std::uint32_t now);
    void drain();
    /// The session closed: the handler hears 1006 if it heard nothing yet.
    void gone();
    /// Our last frame is queued: the stream ends once it is out.
    bool ending() const { return !conversation_ || conversation_->ending(); }

    // WebSocketConversation::Carrier
    void carry(std::string&& bytes) override;
    void push() override;
    void hang_up() override;
    std::string peer() const override;

private:
    Http2Session& session_;
    Http2Stream& stream_;
    std::shared_ptr<WebSocketConversation> conversation_;  // null once gone
};

}  // namespace cspd
