#include "serving/exchange/pending_start.hpp"

#include "serving/blocking_pool.hpp"
#include "serving/loop_context.hpp"

#include <new>

namespace cspd {

std::shared_ptr<PendingExchange> defer_call(LoopContext& loop, std::unique_ptr<CallState>& call,
                                            const ResponseFrame& frame,
                                            std::shared_ptr<PendingExchange::Waiter> waiter) noexcept {
    std::shared_ptr<PendingExchange> pending;
    try {
        call->view.keep();  // the request must outlive the connection's buffers
        pending = std::make_shared<PendingExchange>(loop.io, loop.inbox, std::move(call), frame, false, std::move(waiter));
        pending->hand_to_handler();
        return pending;
    } catch (const std::bad_alloc&) {
        if (!call && pending) call = pending->release_call();  // the handler's call answers at once
        return nullptr;
    }
}

std::shared_ptr<PendingExchange> queue_blocking_call(LoopContext& loop, std::unique_ptr<CallState>& call,
                                                     const ResponseFrame& frame,
                                                     std::shared_ptr<PendingExchange::Waiter> waiter,
                                                     bool websocket) noexcept {
    if (!loop.blocking) return nullptr;
    std::shared_ptr<PendingExchange> pending;
    try {
        call->view.keep();  // the call may run after the connection is gone
        pending = std::make_shared<PendingExchange>(loop.io, loop.inbox, std::move(call), frame, true, std::move(waiter));
        if (websocket) {
            pending->offer_websocket({loop.limits.websocket.deflate, loop.slot});
            pending->call().reply.set_websocket_source(pending.get());
        }
        const bool queued = loop.blocking->submit([pending] {
            if (pending->dropped()) return;  // its client left while it waited for a thread
            const std::optional<int> returned = HandlerCall::run_blocking_call(pending->call());
            pending->call().reply.set_websocket_source(nullptr);  // csp_ws_accept is for the call only
            pending->blocking_call_returned(returned);
        });
        if (queued) return pending;
        call = pending->release_call();
        return nullptr;
    } catch (const std::bad_alloc&) {
        if (!call && pending) call = pending->release_call();
        return nullptr;
    }
}

}  // namespace cspd
