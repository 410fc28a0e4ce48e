// A WebSocket conversation's own connection (see websocket_session.hpp): the hand-over from
// HTTP/1.1, reads into the conversation, its frames written, and the close.
#include "serving/protocols/websocket_session.hpp"

#include "common/clocks.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/lent_read.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <new>

namespace cspd {

std::shared_ptr<WebSocketSession> WebSocketSession::take_over(Connection& from, std::shared_ptr<WebSocketLink> link,
                                                             OutputQueue queued, std::string_view first_bytes) {
    std::shared_ptr<WebSocketSession> next;
    try {
        next = std::make_shared<WebSocketSession>(from, std::move(queued));
        next->conversation_ = std::make_shared<WebSocketConversation>(
            next->loop_, link, static_cast<WebSocketConversation::Carrier&>(*next));
    } catch (const std::bad_alloc&) {
        link->never_carried(next ? next->loop_.slot : nullptr);  // on_close 1006; its topics left
        if (next) next->transport_.close();
        return nullptr;
    }
    next->start();
    next->conversation_->begin(first_bytes);  // the 101 first; then reading, which holds the session from here on
    return next;
}

WebSocketSession::WebSocketSession(Connection& from, OutputQueue queued) noexcept
    : Connection(TakeOver{}, from), queued_(std::move(queued)) {}

WebSocketSession::~WebSocketSession() {
    if (conversation_) conversation_->carrier_gone();
}

void WebSocketSession::start() { last_write_ = coarse_now_ms(); }

std::string WebSocketSession::peer() const { return std::string(address_) + ':' + std::to_string(port_); }

void WebSocketSession::on_readable() {
    if (closed_ || writing_) return;
    const Transport::Io io = read_lent(loop_.buffers, transport_, address_, port_, [&](char* bytes, std::size_t size) {
        conversation_->read(bytes, size);  // writes what it answers, and reads on
    });
    if (closed_) return;
    if (io == Transport::Io::closed || io == Transport::Io::failed) {
        close();  // gone without a close frame (or after ours, without answering): 1006
        return;
    }
    if (io == Transport::Io::would_block) read_more();
}

void WebSocketSession::read_more() {
    if (!closed_ && !writing_ && !transport_.wait_readable(*this)) close();
}

void WebSocketSession::push() {
    if (closed_ || writing_) return;
    const OutputQueue::Written written = queued_.write_to(transport_);
    if (written.bytes > 0) {
        last_write_ = coarse_now_ms();
        if (loop_.slot) bump(loop_.slot->ws_bytes_out, written.bytes);
    }
    if (written.progress == OutputQueue::Progress::would_block) {
        writing_ = true;
        if (!transport_.wait_writable(*this)) close();
        return;
    }
    if (written.progress != OutputQueue::Progress::done || conversation_->ending()) {
        close();
        return;
    }
    conversation_->sent();
    read_more();
}

void WebSocketSession::on_writable() {
    if (closed_) return;
    writing_ = false;
    push();
}

void WebSocketSession::on_tick(std::uint32_t now) {
    if (closed_) return;
    if (writing_ && now - last_write_ >= loop_.limits.send_timeout_s * 1000u) {
        spdlog::debug("client {}:{}: took none of our WebSocket bytes for {} s; closing", address_, port_,
                      loop_.limits.send_timeout_s);
        close();
        return;
    }
    conversation_->tick(now);
}

void WebSocketSession::on_drain() {
    if (!closed_) conversation_->drain();
}

void WebSocketSession::close() {
    if (closed_) return;
    const std::shared_ptr<Connection> keep = shared_from_this();  // the loop's set may hold the last reference
    closed_ = true;
    conversation_->carrier_gone();
    transport_.close();
}

}  // namespace cspd
