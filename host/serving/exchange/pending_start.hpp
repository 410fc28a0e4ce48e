// How a protocol session turns a handler's call into a PendingExchange, the same for every
// protocol: a reply the handler deferred, or a blocking handler's call queued on the loop's
// pool. Loop thread only.
#pragma once

#include "serving/exchange/pending_exchange.hpp"

#include <memory>

namespace cspd {

struct LoopContext;

/// The handler deferred its reply: a pending exchange that owns `call` (taken), holds `waiter`
/// and is held by the handler until it finishes. Null, with `call` given back, without memory.
std::shared_ptr<PendingExchange> defer_call(LoopContext& loop, std::unique_ptr<CallState>& call,
                                            const ResponseFrame& frame,
                                            std::shared_ptr<PendingExchange::Waiter> waiter) noexcept;

/// A blocking handler's call, queued on the loop's pool: its pending exchange. Null, with
/// `call` given back, when there is no pool, its queue is full, or there is no memory.
/// `websocket`: the session can carry a WebSocket, which the handler may then accept.
std::shared_ptr<PendingExchange> queue_blocking_call(LoopContext& loop, std::unique_ptr<CallState>& call,
                                                     const ResponseFrame& frame,
                                                     std::shared_ptr<PendingExchange::Waiter> waiter,
                                                     bool websocket) noexcept;

}  // namespace cspd
