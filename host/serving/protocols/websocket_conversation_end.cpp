// How a WebSocket conversation ends (see websocket_conversation.hpp): the peer's close frame
// answered, ours sent and awaited (a handler's csp_ws_close, a drain), the conversation failed with
// the RFC's code, and the timeouts of the loop's tick (close, idle, pings).
#include "serving/protocols/websocket_conversation.hpp"

#include "common/clocks.hpp"
#include "serving/loop_context.hpp"
#include "websocket/frame_head.hpp"

#include <spdlog/spdlog.h>

namespace cspd {
namespace {

/// How long our close frame waits for the peer's before the connection simply closes.
constexpr std::uint32_t kCloseWaitMs = 5000;

}  // namespace

bool WebSocketConversation::on_close_frame(std::string_view payload) {
    int code = ws::kNoStatus;
    std::string_view reason;
    if (payload.size() == 1) {
        fail(ws::kProtocolError, "a close frame of one byte");
        return false;
    }
    if (payload.size() >= 2) {
        code = (static_cast<unsigned char>(payload[0]) << 8) | static_cast<unsigned char>(payload[1]);
        reason = payload.substr(2);
        if (!ws::is_sendable_close_code(unsigned(code))) {
            fail(ws::kProtocolError, "a close frame with an invalid code");
            return false;
        }
        if (!ws::Utf8Validator::valid(reason)) {
            fail(ws::kInvalidPayload, "a close reason that is not UTF-8");
            return false;
        }
    }
    if (!close_sent_) {
        // Answered with the same code (§5.5.1), after what the handler already sent.
        link_output();
        std::string frame;
        ws::append_close_frame(frame, code == ws::kNoStatus ? 0 : unsigned(code));
        if (!carrier_) return false;
        carrier_->carry(std::move(frame));
        close_sent_ = true;
    }
    tell_closed(code, reason);
    close_after_write_ = true;  // the server closes the TCP connection first (§7.1.1)
    return false;
}

void WebSocketConversation::fail(std::uint16_t code, std::string_view why) {
    if (!carrier_) return;
    spdlog::debug("client {}: WebSocket closed {}: {}", carrier_->peer(), code, why);
    if (!close_sent_) {
        link_->shut();  // what the handler has not handed to the carrier yet is dropped (link_output)
        std::string frame;
        ws::append_close_frame(frame, code, code == ws::kInternalError ? std::string_view{} : why);
        carrier_->carry(std::move(frame));
        close_sent_ = true;
    }
    tell_closed(code, why);
    close_after_write_ = true;
}

void WebSocketConversation::begin_close(std::uint16_t code, std::string_view reason) {
    if (!carrier_ || close_sent_) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    link_output();  // what the handler sent goes before
    if (!carrier_ || close_sent_) return;
    link_->shut();
    std::string frame;
    ws::append_close_frame(frame, code, reason);
    carrier_->carry(std::move(frame));
    close_sent_ = true;
    close_sent_at_ = coarse_now_ms();
    push();
}

void WebSocketConversation::tick(std::uint32_t now) {
    if (!carrier_) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    const ConnectionLimits& limits = loop_.limits;
    if (close_sent_) {
        if (close_sent_at_ && now - close_sent_at_ >= kCloseWaitMs) hang_up();  // no answer to our close
        return;
    }
    if (limits.ws_idle_timeout_s && now - last_read_ >= limits.ws_idle_timeout_s * 1000u) {
        fail(ws::kGoingAway, "silent past --ws-idle-timeout");
        push();
        return;
    }
    if (!limits.ws_ping_interval_s) return;
    const std::uint32_t interval = limits.ws_ping_interval_s * 1000u;
    if (ping_sent_) {
        // Anything the peer sent since counts as an answer: a pong may wait behind a long message.
        if (static_cast<std::int32_t>(last_read_ - ping_sent_) > 0) {
            ping_sent_ = 0;
        } else if (now - ping_sent_ >= interval) {
            fail(ws::kGoingAway, "no answer to a ping");
            push();
            return;
        }
    }
    if (!ping_sent_ && now - last_read_ >= interval) {
        send_control(ws::Opcode::ping, {});
        ping_sent_ = now ? now : 1;
        push();
    }
}

void WebSocketConversation::drain() { begin_close(ws::kGoingAway, "server stopping"); }

}  // namespace cspd
