#include "serving/protocols/http2_websocket.hpp"

#include "serving/pubsub/topic_board.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/http2_session.hpp"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

namespace cspd {

Http2WebSocket::~Http2WebSocket() { gone(); }

void Http2WebSocket::attach(std::shared_ptr<WebSocketLink> link) {
    conversation_ = std::make_shared<WebSocketConversation>(session_.loop_, std::move(link), *this);
}

void Http2WebSocket::begin(std::string_view first_bytes) {
    if (!conversation_) return;
    const std::shared_ptr<WebSocketConversation> conversation = conversation_;
    conversation->begin(first_bytes);
}

void Http2WebSocket::read(std::string& bytes) {
    if (!conversation_ || bytes.empty()) return;
    const std::shared_ptr<WebSocketConversation> conversation = conversation_;
    conversation->read(bytes.data(), bytes.size());
}

void Http2WebSocket::drained() {
    if (!conversation_ || conversation_->ending()) return;
    const std::shared_ptr<WebSocketConversation> conversation = conversation_;
    conversation->sent();
}

void Http2WebSocket::peer_ended() {
    if (!conversation_) return;
    if (conversation_->ending()) {
        push();  // the client answered our close and ended: our END_STREAM follows our last frame
        return;
    }
    spdlog::debug("client {}: ended its WebSocket stream without a closing handshake", peer());
    hang_up();
}

void Http2WebSocket::tick(std::uint32_t now) {
    if (!conversation_) return;
    const std::shared_ptr<WebSocketConversation> conversation = conversation_;
    conversation->tick(now);
}

void Http2WebSocket::drain() {
    if (!conversation_) return;
    const std::shared_ptr<WebSocketConversation> conversation = conversation_;
    conversation->drain();
}

void Http2WebSocket::gone() {
    if (const std::shared_ptr<WebSocketConversation> conversation = std::move(conversation_))
        conversation->carrier_gone();
}

void Http2WebSocket::carry(std::string&& bytes) {
    Http2Stream& s = stream_;
    s.append_output(std::move(bytes));
    if (s.response.size() > kMaxWaiting) {
        spdlog::info("client {}: left {} MiB of WebSocket frames unread; stream reset", peer(), kMaxWaiting >> 20);
        hang_up();
    }
}

void Http2WebSocket::push() {
    if (stream_.data_deferred) {
        stream_.data_deferred = false;
        nghttp2_session_resume_data(session_.session_, stream_.id);
    }
    // A posted wake-up holds the conversation, not the session: sending may close and free it.
    // Nothing of this object (its stream may go with it) is touched after.
    const std::shared_ptr<Connection> keep = session_.shared_from_this();
    session_.send_frames();
}

void Http2WebSocket::hang_up() {
    if (!conversation_) return;
    std::string().swap(stream_.response);
    stream_.sent = 0;
    nghttp2_submit_rst_stream(session_.session_, NGHTTP2_FLAG_NONE, stream_.id, NGHTTP2_CANCEL);
    gone();
}

std::string Http2WebSocket::peer() const {
    return std::string(session_.address_) + ':' + std::to_string(session_.port_) + " stream " +
           std::to_string(stream_.id);
}

}  // namespace cspd
