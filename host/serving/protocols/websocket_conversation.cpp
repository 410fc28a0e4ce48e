// A WebSocket conversation (see websocket_conversation.hpp): its beginning, frames read into
// whole messages for the handler, what the handler sent handed to the carrier, and its callbacks
// run; then how it ends: the closing handshake, failures, the tick's timeouts, the drain.
#include "serving/protocols/websocket_conversation.hpp"

#include "common/clocks.hpp"
#include "serving/exchange/handler_callback.hpp"
#include "serving/loop_context.hpp"
#include "serving/pubsub/topic_board.hpp"
#include "stats/shared_stats.hpp"
#include "websocket/deflate.hpp"
#include "websocket/frame_head.hpp"

#include <spdlog/spdlog.h>

namespace cspd {
namespace {

/// A message buffer larger than this is freed after its message, so an idle conversation stays small.
constexpr std::size_t kKeepMessageCapacity = 64 * 1024;
/// The most a frame's announced length reserves before its bytes come.
constexpr std::uint64_t kReserveAhead = 64 * 1024;

}  // namespace

WebSocketConversation::WebSocketConversation(LoopContext& loop, std::shared_ptr<WebSocketLink> link,
                                             Carrier& carrier) noexcept
    : loop_(loop), link_(std::move(link)), carrier_(&carrier), reader_(link_->deflate()) {}

WebSocketConversation::~WebSocketConversation() {
    if (!told_) tell_closed(ws::kAbnormal, {});
}

void WebSocketConversation::begin(std::string_view first_bytes) {
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    last_read_ = coarse_now_ms();
    if (loop_.slot) bump(loop_.slot->ws_opened);
    link_->attach(keep);
    if (!first_bytes.empty()) {
        std::string copy(first_bytes);  // unmasked in place: not the caller's buffer
        read(copy.data(), copy.size());
    }
    push();  // the answer first; then reading
    if (loop_.draining) drain();
    link_output();  // what the handler sent from its call on
}

void WebSocketConversation::read(char* data, std::size_t size) {
    if (!carrier_) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    last_read_ = coarse_now_ms();
    if (loop_.slot) bump(loop_.slot->ws_bytes_in, size);
    const ws::FrameReader::Result result = reader_.feed(data, size, *this);
    if (result.error != ws::FrameReader::Error::none) fail(ws::kProtocolError, ws::FrameReader::describe(result.error));
    link_output();  // what the callbacks sent, and our answers, go together
}

void WebSocketConversation::push() {
    if (carrier_) carrier_->push();
}

void WebSocketConversation::hang_up() {
    if (carrier_) carrier_->hang_up();
}

void WebSocketConversation::carrier_gone() {
    carrier_ = nullptr;
    if (!told_) tell_closed(ws::kAbnormal, {});
}

bool WebSocketConversation::on_data_frame(ws::Opcode opcode, bool first, bool, bool rsv1, std::uint64_t size) {
    if (close_sent_) return true;  // after our close frame, data is read and dropped (§5.5.1)
    if (first) {
        binary_ = opcode == ws::Opcode::binary;
        compressed_ = rsv1;  // the reader lets RSV1 through only with permessage-deflate
        utf8_.reset();
    }
    if (size > loop_.limits.websocket.max_message - message_.size()) {
        fail(ws::kTooBig, "a message over --ws-max-message");
        return false;
    }
    try {
        // What a frame announces is not trusted with memory: the rest grows as it comes.
        message_.reserve(message_.size() + std::min<std::uint64_t>(size, kReserveAhead));
    } catch (const std::bad_alloc&) {
        fail(ws::kTooBig, "no memory for the message");
        return false;
    }
    return true;
}

bool WebSocketConversation::on_data(std::string_view payload) {
    if (close_sent_) return true;
    if (!binary_ && !compressed_ && !utf8_.feed(payload)) {
        fail(ws::kInvalidPayload, "a text message that is not UTF-8");
        return false;
    }
    message_.append(payload);
    return true;
}

bool WebSocketConversation::on_data_frame_end(bool fin) {
    if (close_sent_ || !fin) return true;
    if (compressed_ && !inflate()) return false;
    if (!binary_ && !compressed_ && !utf8_.complete()) {
        fail(ws::kInvalidPayload, "a text message that ends inside a UTF-8 sequence");
        return false;
    }
    deliver();
    if (message_.capacity() > kKeepMessageCapacity) std::string().swap(message_);
    else message_.clear();
    return carrier_ && !close_after_write_;
}

bool WebSocketConversation::inflate() {
    // The compressed bytes counted toward the limit as they came; what they inflate to counts again.
    std::string whole;
    switch (ws::inflate_message(message_, whole, loop_.limits.websocket.max_message)) {
    case ws::Inflated::ok: break;
    case ws::Inflated::too_big: fail(ws::kTooBig, "a compressed message that inflates past --ws-max-message"); return false;
    case ws::Inflated::corrupt: fail(ws::kInvalidPayload, "a compressed message zlib cannot inflate"); return false;
    }
    if (!binary_ && !ws::Utf8Validator::valid(whole)) {
        fail(ws::kInvalidPayload, "a text message that is not UTF-8");
        return false;
    }
    message_.swap(whole);
    return true;
}

void WebSocketConversation::deliver() {
    if (loop_.slot) bump(loop_.slot->ws_messages_in);
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (!callbacks.on_message || told_) return;
    csp_ws* handle = link_->handle();
    if (!run_callback("WebSocket on_message", [&] {
            callbacks.on_message(handle, message_.data(), message_.size(), binary_ ? CSP_WS_BINARY : CSP_WS_TEXT,
                                 callbacks.user_data);
        }))
        fail(ws::kInternalError, "the handler's on_message threw");
}

bool WebSocketConversation::on_control(ws::Opcode opcode, std::string_view payload) {
    switch (opcode) {
    case ws::Opcode::ping:
        if (!close_sent_) send_control(ws::Opcode::pong, payload);
        return true;
    case ws::Opcode::pong:
        ping_sent_ = 0;  // any pong will do (§5.5.3)
        return true;
    case ws::Opcode::close: return on_close_frame(payload);
    default: return true;
    }
}

void WebSocketConversation::send_control(ws::Opcode opcode, std::string_view payload) {
    if (!carrier_) return;
    std::string frame;
    ws::append_frame_head(frame, opcode, payload.size());
    frame.append(payload);
    carrier_->carry(std::move(frame));
}

void WebSocketConversation::link_output() {
    if (!carrier_) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    const bool closed_before = close_sent_;
    bool handler_closed = false;
    std::string bytes = link_->take(handler_closed);
    if (closed_before) bytes.clear();  // nothing may follow our close frame (§5.5.1)
    if (link_->overflowed() && !closed_before) {
        fail(ws::kPolicy, "the peer does not read what is sent to it");
        push();
        return;
    }
    if (loop_.slot) {
        const std::uint64_t sent = link_->take_sent(), delivered = link_->take_delivered();
        if (sent + delivered) bump(loop_.slot->ws_messages_out, sent + delivered);
        if (delivered) bump(loop_.slot->ws_delivered, delivered);
    }
    if (!bytes.empty()) carrier_->carry(std::move(bytes));
    if (handler_closed && !close_sent_) {
        close_sent_ = true;  // its close frame is the last of what was just taken
        close_sent_at_ = coarse_now_ms();
    }
    push();
}

void WebSocketConversation::topic_gap(std::string_view topic) {
    if (!carrier_ || told_ || close_sent_) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (!callbacks.on_topic_gap) {
        // A handler that cannot hear of it: the client reconnects and reloads (never silence).
        begin_close(ws::kServiceRestart, "service restart");
        return;
    }
    if (loop_.slot) bump(loop_.slot->ws_gaps_told);
    if (!run_callback("WebSocket on_topic_gap", [&] {
            callbacks.on_topic_gap(link_->handle(), topic.data(), topic.size(), callbacks.user_data);
        })) {
        fail(ws::kInternalError, "the handler's on_topic_gap threw");
        push();
    }
}

void WebSocketConversation::sent() {
    if (!carrier_ || told_ || !link_->room(0)) return;
    const std::shared_ptr<WebSocketConversation> keep = shared_from_this();
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (callbacks.on_writable &&
        !run_callback("WebSocket on_writable", [&] { callbacks.on_writable(link_->handle(), callbacks.user_data); })) {
        fail(ws::kInternalError, "the handler's on_writable threw");
        push();
    }
}

void WebSocketConversation::tell_closed(int code, std::string_view reason) {
    if (told_) return;
    told_ = true;
    link_->shut();
    link_->client_unit.reset();  // the client may open another
    TopicBoard::instance().leave_all(*link_);
    if (loop_.slot) {
        bump(loop_.slot->ws_closed);
        bump(loop_.slot->ws_closes[ws_close_kind(code)]);
    }
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (callbacks.on_close)
        run_callback("WebSocket on_close", [&] {
            callbacks.on_close(link_->handle(), code, reason.data(), reason.size(), callbacks.user_data);
        });
}

template <class Call>
bool WebSocketConversation::run_callback(const char* which, Call call) {
    return run_handler_callback(loop_.slot, link_->version(), link_->stats(), which, call);
}

// ---- How a WebSocket conversation ends: the peer's close frame
// answered, ours sent and awaited (a handler's csp_ws_close, a drain), the conversation failed with
// the RFC's code, and the timeouts of the loop's tick (close, idle, pings).
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
    if (limits.websocket.idle_timeout_s && now - last_read_ >= limits.websocket.idle_timeout_s * 1000u) {
        fail(ws::kGoingAway, "silent past --ws-idle-timeout");
        push();
        return;
    }
    if (!limits.websocket.ping_interval_s) return;
    const std::uint32_t interval = limits.websocket.ping_interval_s * 1000u;
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
