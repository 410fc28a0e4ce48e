#include "serving/exchange/pending_exchange.hpp"

#include "routing/router.hpp"
#include "stats/shared_stats.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <utility>

namespace cspd {
namespace asio = boost::asio;

/// One one-shot fd watch: a duplicate of the handler's descriptor (epoll may then watch the
/// same file twice, and the handler's own descriptor is never closed by us).
struct PendingExchange::Watch {
    explicit Watch(asio::io_context& io) : descriptor(io) {}
    ~Watch() {
        boost::system::error_code ignored;
        descriptor.close(ignored);
    }
    asio::posix::stream_descriptor descriptor;  // owns the duplicate
    int fd = -1;                               // the handler's
    bool fired = false;
};

PendingExchange::PendingExchange(asio::io_context& io, std::shared_ptr<LoopInbox> inbox, std::unique_ptr<CallState> call,
                                 ResponseFrame frame, bool blocking, std::shared_ptr<Waiter> waiter)
    : io_(io), inbox_(std::move(inbox)), call_(std::move(call)), frame_(frame), blocking_(blocking),
      waiter_(std::move(waiter)),
      stream_framing_(waiter_ ? waiter_->stream_framing(frame_) : StreamOutbox::Framing::raw) {
    call_->reply.set_pending(this);  // csp_reply_stream on it streams this reply
}

PendingExchange::~PendingExchange() = default;

CallStatus PendingExchange::send_answer(std::optional<int> returned, const ResponseFrame& frame, Router& router,
                                        ResponseSink& sink) {
    const CallStatus status = HandlerCall::answer(*call_, *call_->version, returned, frame, sink);
    router.count_response(status.sent);
    if (returned) router.remember(*call_, *call_->version, status.returned);
    return status;
}

void PendingExchange::send_timeout(Router& router, ResponseSink& sink) {
    drop(CSP_ABORT_TIMEOUT);
    const std::string_view id = frame_.request_id_header ? call_->view.request_id() : std::string_view{};
    ResponseFrame closing = frame_;
    closing.keep_alive = false;
    sink.send(error_response(HttpStatus::gateway_timeout, id), closing);
    router.count_response(HttpStatus::gateway_timeout);
}

void PendingExchange::count_stream(Router& router) {
    if (const auto checked = from_handler(stream_status_)) router.count_response(*checked);
    if (call_->stats) bump(call_->stats->requests[status_class(stream_status_)]);
    if (!stream_ || !frame_.compression) return;
    const StreamOutbox::Coded coded = stream_->coded();
    frame_.compression->counters.count(coded.coding, coded.bytes_in, coded.bytes_out);
}

csp_reply* PendingExchange::reply() noexcept { return call_->reply.raw(); }

int PendingExchange::finish(int status) noexcept {
    if (blocking_ && !streaming()) return -1;  // a blocking call's answer is what it returns
    if (finish_called_.exchange(true)) {
        spdlog::error("handler {}: a reply was finished (or its stream ended) twice; the second is ignored",
                      call_->version->describe());
        return -1;
    }
    // A stream ends cleanly below 400 (its last chunk goes out first), and is cut short from 400 on.
    bool seen = !dropped_.load();
    if (streaming()) {
        if (status < 400) {
            StreamOutbox::Result ended = stream_->end();  // fails once the stream is closed (dropped, cut)
            if (ended.broken && !cut_.exchange(true)) {
                spdlog::error("handler {}: compressing the end of its stream failed (no memory); the stream is cut",
                              call_->version->describe());
                ended.poke = true;  // the loop cuts it before it hears of the finish
            }
            if (ended.poke) poke_loop();
            seen = seen && ended.code == 0;
        }
        seen = seen && !cut_;
    }
    // The handler's reference moves onto the loop with the finish; if the loop is gone (the
    // server is stopping) it is kept: nothing may unload code that may still be running.
    if (!inbox_->post([this, status] {
            std::shared_ptr<PendingExchange> keep = std::move(self_);
            finished(status);
        }))
        return -1;
    return seen ? 0 : -1;
}

void PendingExchange::blocking_call_returned(std::optional<int> returned) {
    if (streaming()) {
        // Its stream ends with the call, if it has not ended before: cut short if the call failed.
        const bool clean = returned && (*returned == CSP_DEFERRED || *returned < 400);
        if (!finish_called_) finish(clean ? 200 : 500);
        return;
    }
    finish_called_ = true;
    inbox_->post([self = shared_from_this(), returned] { self->finished(returned); });
}

void PendingExchange::offer_websocket(const WebSocketOffer& offer) { websocket_offer_ = offer; }

WebSocketChannel* PendingExchange::accept_websocket(const csp_ws_callbacks& callbacks) noexcept {
    if (!websocket_offer_ || websocket_ || streaming() || dropped_) return nullptr;
    websocket_ = WebSocketLink::accept(call_->view.request(), websocket_offer_->deflate, inbox_, callbacks,
                                       call_->version, call_->stats, call_->reply.websocket_extensions_);
    if (websocket_) websocket_->client_unit = std::move(call_->client_unit);
    return websocket_.get();
}

CallStatus PendingExchange::send_websocket_accept(std::optional<int> returned, Router& router, ResponseSink& sink) {
    const CallStatus status =
        HandlerCall::answer_websocket(*call_, *call_->version, returned, call_->view.request(), sink);
    router.count_response(status.sent);
    return status;
}

void PendingExchange::finished(std::optional<int> returned) {
    if (done_) return;
    done_ = true;
    cancel_callbacks();
    if (streaming()) stream_->close();
    if (!dropped_ && waiter_) waiter_->answered(*this, returned);
    if (websocket_) {
        // Accepted, but its session did not take it (the client left during the call, or it timed out).
        spdlog::info("handler {}: a WebSocket it accepted ended before it began: its client is gone",
                     call_->version->describe());
        std::exchange(websocket_, nullptr)->never_carried(websocket_offer_ ? websocket_offer_->slot : nullptr);
    }
    waiter_.reset();  // the connection
    if (done_fn_) done_fn_(handle(), done_user_data_);
    done_fn_ = nullptr;
}

void PendingExchange::drop(int reason, bool loop_ending) {
    if (!done_ && !dropped_.exchange(true)) notify_abort(reason, true);
    if (streaming()) stream_->close();  // writers get -1; one waiting for room wakes
    // Nobody waits for the answer any more: let go of the waiter, later (it may be the one
    // calling, and this its last reference).
    if (waiter_) asio::post(io_, [release = std::move(waiter_)] {});
    waiter_.reset();
    // Nothing may wait on an io_context that is about to be destroyed.
    if (loop_ending) cancel_callbacks();
}

void PendingExchange::warn_draining() {
    if (!done_ && !dropped_) notify_abort(CSP_ABORT_DRAINING, false);
}

void PendingExchange::notify_abort(int reason, bool loss) {
    csp_abort_fn fn;
    void* user_data;
    {
        std::lock_guard lock(abort_mutex_);
        bool& told = loss ? lost_told_ : drain_told_;
        if (loss) {
            if (lost_reason_ != 0) return;  // the first loss is the one told
            lost_reason_ = reason;
        }
        if (told || !abort_fn_) return;  // a loss is told when the callback is set
        told = true;
        fn = abort_fn_;
        user_data = abort_user_data_;
    }
    if (!finish_called_) fn(handle(), reason, user_data);
}

int PendingExchange::on_abort(csp_abort_fn fn, void* user_data) noexcept {
    if (!fn) return -1;
    int late_reason = 0;
    {
        std::lock_guard lock(abort_mutex_);
        if (abort_fn_) return -1;  // once
        abort_fn_ = fn;
        abort_user_data_ = user_data;
        if (lost_reason_ != 0 && !lost_told_) {
            lost_told_ = true;
            late_reason = lost_reason_;
        }
    }
    // Set after the client had gone: tell it on the loop, as promised.
    if (late_reason)
        inbox_->post([self = shared_from_this(), fn, user_data, late_reason] {
            if (!self->done_ && !self->finish_called_) fn(self->handle(), late_reason, user_data);
        });
    return 0;
}

int PendingExchange::on_done(csp_done_fn fn, void* user_data) noexcept {
    if (!fn || done_fn_) return -1;
    done_fn_ = fn;  // set in the call or on the loop, before the finish is taken in
    done_user_data_ = user_data;
    return 0;
}

int PendingExchange::timer(unsigned milliseconds, csp_timer_fn fn, void* user_data) noexcept {
    if (blocking_ || !inbox_->on_loop_thread() || done_) return -1;
    try {
        auto& timer = timers_.emplace_back(io_);
        auto where = std::prev(timers_.end());
        timer.expires_after(std::chrono::milliseconds(milliseconds));
        timer.async_wait([self = shared_from_this(), where, fn, user_data](boost::system::error_code ec) {
            if (ec || self->done_) return;
            self->timers_.erase(where);
            if (!self->finish_called_) fn(self->handle(), user_data);
        });
    } catch (const std::exception& e) {
        spdlog::error("handler {}: csp_loop_timer: {}", call_->version->describe(), e.what());
        return -1;
    }
    return 0;
}

int PendingExchange::watch_fd(int fd, unsigned events, csp_fd_fn fn, void* user_data) noexcept {
    if (blocking_ || !inbox_->on_loop_thread() || done_) return -1;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -1;
    try {
        auto watch = std::make_shared<Watch>(io_);
        watch->fd = fd;
        watch->descriptor.assign(copy);
        watches_.push_back(watch);
        // Each wait holds the watch: when both are ready in one pass, the second still finds it.
        const auto on_ready = [self = shared_from_this(), watch, fn, user_data](unsigned ready) {
            return [self, watch, fn, user_data, ready](boost::system::error_code ec) {
                if (ec || self->done_ || watch->fired) return;
                watch->fired = true;
                boost::system::error_code ignored;
                watch->descriptor.close(ignored);  // the other wait, if any, ends as aborted
                std::erase(self->watches_, watch);
                if (!self->finish_called_) fn(self->handle(), watch->fd, ready, user_data);
            };
        };
        if (events & CSP_READABLE)
            watch->descriptor.async_wait(asio::posix::descriptor_base::wait_read, on_ready(CSP_READABLE));
        if (events & CSP_WRITABLE)
            watch->descriptor.async_wait(asio::posix::descriptor_base::wait_write, on_ready(CSP_WRITABLE));
    } catch (const std::exception& e) {
        spdlog::error("handler {}: csp_loop_watch_fd: {}", call_->version->describe(), e.what());
        return -1;
    }
    return 0;
}

void PendingExchange::cancel_callbacks() {
    timers_.clear();  // cancels: their handlers see operation_aborted
    for (const auto& watch : watches_) {
        watch->fired = true;
        boost::system::error_code ignored;
        watch->descriptor.close(ignored);  // ends its waits (as aborted) and the duplicate descriptor
    }
    watches_.clear();
}

} // namespace cspd
