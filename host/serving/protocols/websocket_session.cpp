// A WebSocket session's messages (see websocket_session.hpp): the hand-over, frames read into whole
// messages for the handler, what the handler sent written out, and its callbacks run. How a
// conversation ends -- the closing handshake, failures, timeouts, the drain -- is
// websocket_session_end.cpp.
#include "serving/protocols/websocket_session.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "serving/exchange/topic_board.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/lent_read.hpp"
#include "stats/shared_stats.hpp"
#include "stats/watchdog_mark.hpp"
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

std::shared_ptr<WebSocketSession> WebSocketSession::take_over(Connection& from, std::shared_ptr<WebSocketLink> link,
                                                             OutputQueue queued, std::string_view first_bytes) {
    std::shared_ptr<WebSocketSession> next;
    try {
        next = std::make_shared<WebSocketSession>(from, std::move(link), std::move(queued));
    } catch (const std::bad_alloc&) {
        link->shut();
        TopicBoard::instance().leave_all(*link);  // subscribed during the call, perhaps
        return nullptr;
    }
    next->link_->attach(next);
    next->start();
    if (!first_bytes.empty()) {
        std::string copy(first_bytes);  // unmasked in place: not the caller's buffer
        next->process(copy.data(), copy.size());
    }
    next->flush();  // the 101 first; then reading, which holds the session from here on
    if (next->loop_.draining) next->on_drain();
    next->link_output();  // what the handler sent from its call on
    return next;
}

WebSocketSession::WebSocketSession(Connection& from, std::shared_ptr<WebSocketLink> link, OutputQueue queued) noexcept
    : Connection(TakeOver{}, from), link_(std::move(link)), queued_(std::move(queued)), reader_(link_->deflate()) {}

WebSocketSession::~WebSocketSession() {
    if (!told_) tell_closed(ws::kAbnormal, {});
}

std::size_t WebSocketSession::idle_bytes() { return sizeof(WebSocketSession) + sizeof(WebSocketLink); }

void WebSocketSession::start() {
    last_read_ = last_write_ = coarse_now_ms();
    if (loop_.slot) bump(loop_.slot->ws_opened);
}

void WebSocketSession::on_readable() {
    if (closed_ || writing_) return;
    read_now();
}

void WebSocketSession::read_now() {
    const Transport::Io io = read_lent(loop_.buffers, transport_, address_, port_, [&](char* bytes, std::size_t size) {
        last_read_ = coarse_now_ms();
        process(bytes, size);
    });
    if (closed_) return;
    if (io == Transport::Io::closed || io == Transport::Io::failed) {
        close();  // gone without a close frame (or after ours, without answering): 1006
        return;
    }
    link_output();  // what the callbacks sent goes with this write; then reading again
}

void WebSocketSession::read_more() {
    if (!closed_ && !writing_ && !transport_.wait_readable(*this)) close();
}

void WebSocketSession::process(char* data, std::size_t size) {
    if (loop_.slot) bump(loop_.slot->ws_bytes_in, size);
    const ws::FrameReader::Result result = reader_.feed(data, size, *this);
    if (result.error != ws::FrameReader::Error::none) fail(ws::kProtocolError, ws::FrameReader::describe(result.error));
}

bool WebSocketSession::on_data_frame(ws::Opcode opcode, bool first, bool, bool rsv1, std::uint64_t size) {
    if (close_sent_) return true;  // after our close frame, data is read and dropped (§5.5.1)
    if (first) {
        binary_ = opcode == ws::Opcode::binary;
        compressed_ = rsv1;  // the reader lets RSV1 through only with permessage-deflate
        utf8_.reset();
    }
    if (size > loop_.limits.ws_max_message - message_.size()) {
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

bool WebSocketSession::on_data(std::string_view payload) {
    if (close_sent_) return true;
    if (!binary_ && !compressed_ && !utf8_.feed(payload)) {
        fail(ws::kInvalidPayload, "a text message that is not UTF-8");
        return false;
    }
    message_.append(payload);
    return true;
}

bool WebSocketSession::on_data_frame_end(bool fin) {
    if (close_sent_ || !fin) return true;
    if (compressed_ && !inflate()) return false;
    if (!binary_ && !compressed_ && !utf8_.complete()) {
        fail(ws::kInvalidPayload, "a text message that ends inside a UTF-8 sequence");
        return false;
    }
    deliver();
    if (message_.capacity() > kKeepMessageCapacity) std::string().swap(message_);
    else message_.clear();
    return !closed_ && !close_after_write_;
}

bool WebSocketSession::inflate() {
    // The compressed bytes counted toward the limit as they came; what they inflate to counts again.
    std::string whole;
    switch (ws::inflate_message(message_, whole, loop_.limits.ws_max_message)) {
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

void WebSocketSession::deliver() {
    if (loop_.slot) bump(loop_.slot->ws_messages_in);
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (!callbacks.on_message || told_) return;
    csp_ws* handle = link_->handle();
    if (!run_callback("on_message", [&] {
            callbacks.on_message(handle, message_.data(), message_.size(), binary_ ? CSP_WS_BINARY : CSP_WS_TEXT,
                                 callbacks.user_data);
        }))
        fail(ws::kInternalError, "the handler's on_message threw");
}

bool WebSocketSession::on_control(ws::Opcode opcode, std::string_view payload) {
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

void WebSocketSession::send_control(ws::Opcode opcode, std::string_view payload) {
    std::string frame;
    ws::append_frame_head(frame, opcode, payload.size());
    frame.append(payload);
    queued_.append_owned(std::move(frame));
}

void WebSocketSession::link_output() {
    if (closed_) return;
    const bool closed_before = close_sent_;
    bool handler_closed = false;
    std::string bytes = link_->take(handler_closed);
    if (closed_before) bytes.clear();  // nothing may follow our close frame (§5.5.1)
    if (link_->overflowed() && !closed_before) {
        fail(ws::kPolicy, "the peer does not read what is sent to it");
        flush();
        return;
    }
    if (loop_.slot) {
        const std::uint64_t sent = link_->take_sent(), delivered = link_->take_delivered();
        if (sent + delivered) bump(loop_.slot->ws_messages_out, sent + delivered);
        if (delivered) bump(loop_.slot->ws_delivered, delivered);
    }
    if (!bytes.empty()) queued_.append_owned(std::move(bytes));
    if (handler_closed && !close_sent_) {
        close_sent_ = true;  // its close frame is the last of what was just taken
        close_sent_at_ = coarse_now_ms();
    }
    if (!writing_) flush();
}

void WebSocketSession::flush() {
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
    if (written.progress != OutputQueue::Progress::done) {
        close();
        return;
    }
    if (close_after_write_) {
        close();
        return;
    }
    if (link_->room(0) && !told_) {
        const csp_ws_callbacks& callbacks = link_->callbacks();
        if (callbacks.on_writable && !run_callback("on_writable", [&] {
                callbacks.on_writable(link_->handle(), callbacks.user_data);
            })) {
            fail(ws::kInternalError, "the handler's on_writable threw");
            flush();
            return;
        }
    }
    read_more();
}

void WebSocketSession::on_writable() {
    if (closed_) return;
    writing_ = false;
    flush();
}

void WebSocketSession::tell_closed(int code, std::string_view reason) {
    if (told_) return;
    told_ = true;
    link_->shut();
    TopicBoard::instance().leave_all(*link_);
    if (loop_.slot) {
        bump(loop_.slot->ws_closed);
        bump(loop_.slot->ws_closes[ws_close_kind(code)]);
    }
    const csp_ws_callbacks& callbacks = link_->callbacks();
    if (callbacks.on_close)
        run_callback("on_close", [&] {
            callbacks.on_close(link_->handle(), code, reason.data(), reason.size(), callbacks.user_data);
        });
}

template <class Call>
bool WebSocketSession::run_callback(const char* which, Call call) {
    // Marked for the master's watchdog as a call is: a callback that never returns has its worker
    // aborted after --handler-timeout, and the crash is blamed on the handler.
    try {
        WatchdogMark watched(loop_.slot, link_->stats());
        RunningHandler marker(link_->version().label());  // named in the crash report if it brings the process down
        call();
        return true;
    } catch (const std::exception& e) {
        spdlog::error("handler {}: its WebSocket {} threw: {}", link_->version().describe(), which, e.what());
    } catch (...) {
        spdlog::error("handler {}: its WebSocket {} threw a non-std exception", link_->version().describe(), which);
    }
    if (link_->stats()) bump(link_->stats()->errors);
    return false;
}

}  // namespace cspd
