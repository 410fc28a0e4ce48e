// PendingExchange as a stream (csp_reply_stream): the head is kept for the session to send,
// the body goes through the StreamOutbox, and the loop is poked once per batch of writes.
#include "serving/blocking_pool.hpp"
#include "serving/exchange/pending_exchange.hpp"

#include "routing/answer_compression.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

csp_stream* PendingExchange::start_stream(int status) noexcept {
    if (finish_called_ || streaming() || dropped_) return nullptr;
    const std::optional<HttpStatus> checked = from_handler(status);
    if (!checked) return nullptr;
    try {
        HandlerReply& reply = call_->reply;
        stream_head_.status = *checked;
        stream_head_.content_type.assign(reply.content_type());
        stream_head_.fields = reply.fields();
        if (frame_.request_id_header) stream_head_.request_id.assign(call_->view.request_id());
        // Compressed as a whole answer would be (routing/answer_compression), each piece flushed.
        ContentCoding coding = ContentCoding::identity;
        if (reply.compress() && frame_.compression) {
            Response head;
            head.status = *checked;
            head.content_type = stream_head_.content_type;
            head.fields = stream_head_.fields.list();
            head.body_kind = BodyKind::stream;
            coding = encode_stream_head(head, call_->view.request(), frame_, stream_head_.fields);
        }
        auto outbox = std::make_unique<StreamOutbox>(stream_framing_, coding);
        // What the handler appended before it began to stream is the body's beginning.
        if (reply.consistent() && !reply.body().empty()) outbox->write(reply.body(), false);
        stream_ = std::move(outbox);
    } catch (const std::exception&) {
        return nullptr;
    }
    stream_status_ = status;
    if (blocking_) self_ = shared_from_this();  // the stream may outlive the call, until it ends
    streaming_.store(true);
    // A drop that came meanwhile did not see the stream: close it here (both sides are seq_cst).
    if (dropped_.load()) stream_->close();
    poke_loop();  // the head goes now
    return stream_handle();
}

std::optional<Response> PendingExchange::take_stream_head() {
    if (!streaming() || stream_head_taken_) return std::nullopt;
    stream_head_taken_ = true;
    Response head;
    head.status = stream_head_.status;
    head.content_type = stream_head_.content_type;
    head.fields = stream_head_.fields.list();
    head.body_kind = BodyKind::stream;
    head.request_id = stream_head_.request_id;
    return head;
}

int PendingExchange::stream_write(std::string_view bytes) noexcept {
    if (!streaming()) return -1;
    try {  // the outbox (and a stream's coder) may need memory
        if (LoopInbox::on_an_event_loop()) return after_stream_write(stream_->write(bytes, false));
        BlockingPool::ClientWait waiting;  // a pool thread waiting for room is not a stuck call
        return after_stream_write(stream_->write(bytes, true));
    } catch (const std::bad_alloc&) {
        return -1;
    }
}

int PendingExchange::stream_event(std::string_view event, std::string_view data) noexcept {
    if (!streaming()) return -1;
    try {
        if (LoopInbox::on_an_event_loop()) return after_stream_write(stream_->event(event, data, false));
        BlockingPool::ClientWait waiting;
        return after_stream_write(stream_->event(event, data, true));
    } catch (const std::bad_alloc&) {
        return -1;
    }
}

int PendingExchange::after_stream_write(StreamOutbox::Result result) {
    if (result.overflow && !cut_.exchange(true)) {
        spdlog::error("handler {}: kept writing to a stream past {} KiB waiting (it ignored CSP_AGAIN); the "
                      "stream is cut",
                      call_->version->describe(), StreamOutbox::kHardLimit / 1024);
        stream_->close();
        result.poke = true;  // the loop closes the connection
    }
    if (result.broken && !cut_.exchange(true)) {
        spdlog::error("handler {}: compressing its stream failed (no memory); the stream is cut",
                      call_->version->describe());
        result.poke = true;
    }
    if (result.poke) poke_loop();
    return result.code;
}

void PendingExchange::poke_loop() {
    inbox_->post([self = shared_from_this()] {
        if (self->waiter_ && !self->done_) self->waiter_->stream_output(*self);
    });
}

int PendingExchange::on_writable(csp_writable_fn fn, void* user_data) noexcept {
    if (!fn || !streaming()) return -1;
    std::lock_guard lock(abort_mutex_);
    if (writable_fn_) return -1;  // once
    writable_fn_ = fn;
    writable_user_data_ = user_data;
    return 0;
}

void PendingExchange::stream_room(std::size_t backlog) {
    if (!streaming() || !stream_->set_backlog(backlog)) return;
    csp_writable_fn fn;
    void* user_data;
    {
        std::lock_guard lock(abort_mutex_);
        fn = writable_fn_;
        user_data = writable_user_data_;
    }
    if (fn && !finish_called_ && !done_) fn(stream_handle(), user_data);
}

}  // namespace cspd
