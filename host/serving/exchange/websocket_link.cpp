#include "serving/exchange/websocket_link.hpp"

#include "serving/blocking_pool.hpp"
#include "serving/exchange/handler_callback.hpp"
#include "serving/pubsub/topic_board.hpp"
#include "websocket/deflate.hpp"
#include "websocket/frame_head.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace cspd {

std::shared_ptr<WebSocketLink> WebSocketLink::accept(const HttpRequest& request, bool deflate_allowed,
                                                     std::shared_ptr<LoopInbox> inbox, const csp_ws_callbacks& callbacks,
                                                     std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                                     std::string& extensions) noexcept {
    try {
        std::optional<std::string> deflate;
        if (deflate_allowed) deflate = ws::accept_deflate(request);
        auto link = std::make_shared<WebSocketLink>(std::move(inbox), callbacks, std::move(version), stats,
                                                    deflate.has_value());
        extensions = deflate.value_or(std::string());
        return link;
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}

WebSocketLink::WebSocketLink(std::shared_ptr<LoopInbox> inbox, const csp_ws_callbacks& callbacks,
                             std::shared_ptr<const HandlerVersion> version, HandlerStats* stats, bool deflate)
    : inbox_(std::move(inbox)), callbacks_{}, version_(std::move(version)), stats_(stats), deflate_(deflate),
      outbox_(StreamOutbox::Framing::raw), accepted_on_(std::this_thread::get_id()) {
    // A handler built against a later 2.x may pass a longer struct, one built against 2.4 a shorter
    // one (no on_topic_gap): what both know is copied, the rest stays null.
    std::memcpy(&callbacks_, &callbacks, std::min(callbacks.size, sizeof callbacks_));
    callbacks_.size = sizeof callbacks_;
}

int WebSocketLink::send(std::string_view data, bool binary) noexcept {
    std::string framed;
    try {
        framed.reserve(ws::kMaxHeadBytes);
        const ws::Opcode opcode = binary ? ws::Opcode::binary : ws::Opcode::text;
        // Compressed on the sender's thread, alone (no context is taken over): when it is smaller.
        thread_local std::string compressed;
        compressed.clear();
        if (deflate_ && data.size() >= ws::kDeflateFrom && ws::deflate_message(data, compressed) &&
            compressed.size() < data.size()) {
            ws::append_frame_head(framed, opcode, compressed.size(), true, true);
            data = compressed;
        } else {
            ws::append_frame_head(framed, opcode, data.size());
        }
    } catch (const std::bad_alloc&) {
        return -1;
    }
    try {
        // Off a loop a sender waits for room, except the thread that accepted before the conversation
        // is carried (a blocking handler's call: nothing is taken until it returns).
        const bool may_wait = !LoopInbox::on_an_event_loop() &&
                              (carried_.load(std::memory_order_acquire) || std::this_thread::get_id() != accepted_on_);
        std::optional<BlockingPool::ClientWait> waiting;  // a pool thread waiting for room is not a stuck call
        if (may_wait) waiting.emplace();
        const int code = after_write(outbox_.write_parts(framed, data, may_wait));
        if (code >= 0) sent_.fetch_add(1, std::memory_order_relaxed);
        return code;
    } catch (const std::bad_alloc&) {
        return -1;
    }
}

int WebSocketLink::put_frame(std::string_view frame, bool& poke) noexcept {
    try {
        if (gaps_pending_.load(std::memory_order_acquire)) {
            std::lock_guard lock(gap_lock_);
            if (gaps_pending_.load(std::memory_order_relaxed)) {
                poke = false;
                if (after_gap_bytes_ + frame.size() > StreamOutbox::kHardLimit) {
                    overflowed_.store(true, std::memory_order_release);  // cut, as any subscriber that stops reading
                    return -1;
                }
                after_gap_.emplace_back(frame);
                after_gap_bytes_ += frame.size();
                delivered_.fetch_add(1, std::memory_order_relaxed);
                return 0;
            }
        }
        StreamOutbox::Result result = outbox_.write(frame, false);
        const int code = checked(result);
        poke = result.poke;
        if (code >= 0) delivered_.fetch_add(1, std::memory_order_relaxed);
        return code;
    } catch (const std::bad_alloc&) {
        poke = false;
        return -1;
    }
}

void WebSocketLink::never_carried(LoopSlot* slot) {
    shut();
    client_unit.reset();
    TopicBoard::instance().leave_all(*this);  // subscribed during the call, perhaps
    if (!callbacks_.on_close) return;
    run_handler_callback(slot, *version_, stats_, "WebSocket on_close", [&] {
        callbacks_.on_close(handle(), ws::kAbnormal, "", 0, callbacks_.user_data);
    });
}

void WebSocketLink::wake() {
    if (const std::shared_ptr<Owner> session = owner_.lock()) session->link_output();
}

void WebSocketLink::topic_gap(std::string_view topic) {
    gaps_pending_.fetch_add(1, std::memory_order_acq_rel);
    try {
        inbox_->post([self = shared_from_this(), name = std::string(topic)] {
            if (const std::shared_ptr<Owner> session = self->owner_.lock()) session->topic_gap(name);
            self->gap_told();
        });
    } catch (const std::bad_alloc&) {
        gap_told();  // untold: without memory for a line of text, the conversation has bigger troubles
    }
}

void WebSocketLink::gap_told() {
    bool wrote = false;
    {
        std::lock_guard lock(gap_lock_);
        if (gaps_pending_.load(std::memory_order_acquire) > 1) {
            gaps_pending_.fetch_sub(1, std::memory_order_acq_rel);  // another gap still holds them
            return;
        }
        for (const std::string& frame : after_gap_) {
            StreamOutbox::Result result = outbox_.write(frame, false);
            if (checked(result) < 0) break;  // closed meanwhile (a 1012), or cut
            wrote = true;
        }
        after_gap_.clear();
        after_gap_bytes_ = 0;
        // Only now: a frame the relay puts meanwhile waits for this lock, and goes after these.
        gaps_pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    if (wrote && LoopInbox::on_an_event_loop()) wake();
    else if (wrote) wake_later();
}

int WebSocketLink::close(unsigned code, std::string_view reason) noexcept {
    std::string frame;
    try {
        ws::append_close_frame(frame, code, reason);
    } catch (const std::bad_alloc&) {
        return -1;
    }
    const StreamOutbox::Result result = outbox_.end_with(frame);
    if (result.code != 0) return -1;
    if (result.poke) poke();
    return 0;
}

int WebSocketLink::subscribe(std::string_view topic) noexcept {
    return TopicBoard::instance().subscribe(topic, shared_from_this());
}

int WebSocketLink::unsubscribe(std::string_view topic) noexcept {
    return TopicBoard::instance().unsubscribe(topic, *this);
}

int WebSocketLink::after_write(StreamOutbox::Result result) {
    const int code = checked(result);
    if (result.poke) poke();
    return code;
}

int WebSocketLink::checked(StreamOutbox::Result& result) {
    if (result.overflow && !overflowed_.exchange(true, std::memory_order_acq_rel)) {
        spdlog::warn("handler {}: a WebSocket's peer left {} KiB unread and more was sent to it; it is closed "
                     "(1008)",
                     version_->describe(), StreamOutbox::kHardLimit / 1024);
        outbox_.close();
        result.poke = true;  // the loop cuts the conversation
    }
    return result.code;
}

void WebSocketLink::poke() {
    // owner_ is read on the loop only: the handle may reach another thread before attach() ran.
    inbox_->post([self = shared_from_this()] { self->wake(); });
}

}  // namespace cspd
