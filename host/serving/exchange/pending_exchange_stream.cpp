// PendingExchange as a stream (csp_reply_stream): the head is framed on the handler's thread,
// the body goes through the StreamOutbox, and the loop is poked once per batch of writes.
#include "http/date_cache.hpp"
#include "http/response.hpp"
#include "serving/blocking_pool.hpp"
#include "serving/exchange/pending_exchange.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

csp_stream* PendingExchange::start_stream(int status) noexcept {
    if (finish_called_ || streaming() || dropped_) return nullptr;
    const std::optional<HttpStatus> checked = from_handler(status);
    if (!checked) return nullptr;
    try {
        thread_local DateCache date;  // any thread may start a stream: no loop's cache
        HandlerReply& reply = call_->reply;
        ResponseHead head;
        head.status = *checked;
        head.content_type = reply.content_type();
        head.extra_headers = reply.extra_headers();
        head.date = date.now();
        if (frame_.request_id_header) head.request_id = call_->view.request_id();
        head.keep_alive = frame_.keep_alive;
        head.http10 = frame_.http10;
        std::string text;
        append_stream_head(text, head);
        const auto framing = frame_.head_only ? StreamOutbox::Framing::none
                             : frame_.http10 || frame_.unframed ? StreamOutbox::Framing::raw
                                              : StreamOutbox::Framing::chunked;
        auto outbox = std::make_unique<StreamOutbox>(framing, std::move(text));
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

int PendingExchange::stream_write(std::string_view bytes) noexcept {
    if (!streaming()) return -1;
    if (LoopInbox::on_an_event_loop()) return after_stream_write(stream_->write(bytes, false));
    BlockingPool::ClientWait waiting;  // a pool thread waiting for room is not a stuck call
    return after_stream_write(stream_->write(bytes, true));
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
