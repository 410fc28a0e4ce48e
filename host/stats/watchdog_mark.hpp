// Marks handler code running on an event loop in the loop's slot, for the master's watchdog: a
// call, or a WebSocket callback, that runs past --handler-timeout has its worker aborted, blamed on
// the handler named here.
#pragma once

#include "common/clocks.hpp"
#include "stats/shared_stats.hpp"

#include <cstdint>

namespace cspd {

class WatchdogMark {
public:
    /// `stats`: the running handler's counters in `slot` (null: unnamed); no mark without a slot.
    WatchdogMark(LoopSlot* slot, HandlerStats* stats) : slot_(slot) {
        if (!slot_) return;
        slot_->running_handler.store(stats ? static_cast<std::uint32_t>(stats - slot_->handlers().data()) + 1 : 0,
                                     std::memory_order_relaxed);
        // The watchdog works in seconds: the coarse clock (a few ns, not ~27) is enough for it.
        // Release: the master reading this start also sees which handler it belongs to.
        slot_->handler_started_ns.store(coarse_monotonic_now_ns(), std::memory_order_release);
    }
    ~WatchdogMark() {
        if (slot_) slot_->handler_started_ns.store(0, std::memory_order_relaxed);
    }
    WatchdogMark(const WatchdogMark&) = delete;
    WatchdogMark& operator=(const WatchdogMark&) = delete;

private:
    LoopSlot* slot_;
};

}  // namespace cspd
