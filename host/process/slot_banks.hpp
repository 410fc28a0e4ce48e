// Where each worker writes its loops' LoopSlots. With room for two banks, a worker that must be
// replaced without a crash (--worker-max-rss, an init past --init-timeout) hands over to a
// successor writing the other bank, so the old one's counters stay readable while it drains.
#pragma once

#include "common/clocks.hpp"
#include "stats/shared_stats.hpp"

namespace cspd {

class SlotBanks {
public:
    SlotBanks(SharedStats& stats, unsigned workers, unsigned threads)
        : stats_(stats), workers_(workers), threads_(threads), count_(2 * workers * threads <= kMaxSlots ? 2 : 1) {
        stats_.slot_count.store(count_ * workers * threads);
    }

    /// 2, or 1 when two banks of every loop do not fit in kMaxSlots.
    unsigned count() const { return count_; }
    unsigned threads() const { return threads_; }

    unsigned first_slot(unsigned worker, unsigned bank) const { return (bank * workers_ + worker) * threads_; }
    LoopSlot* slots(unsigned worker, unsigned bank) const { return &stats_.slots[first_slot(worker, bank)]; }

    /// Before a process starts writing these slots: nothing ready, crashed, blamed or running.
    void prepare_for_start(unsigned worker, unsigned bank) const {
        LoopSlot* first = slots(worker, bank);
        for (unsigned t = 0; t < threads_; ++t) {
            LoopSlot& slot = first[t];
            slot.ready.store(0);
            slot.crashed.store(0);
            slot.crashed_elsewhere.store(0);
            slot.blame.phase.store(0);
            slot.handler_started_ns.store(0);
            slot.thread_id.store(0);
            slot.started_unix_ms.store(unix_now_ms());
            slot.cluster_reserved.store(0);
        }
    }
    /// Its process died: no pid, no connections, no call running (its counters stay, as history).
    void mark_dead(unsigned worker, unsigned bank) const {
        LoopSlot* first = slots(worker, bank);
        for (unsigned t = 0; t < threads_; ++t) {
            first[t].pid.store(0);
            first[t].open_connections.store(0);
            first[t].handler_started_ns.store(0);
            first[t].cluster_reserved.store(0);  // what it had on its way is settled by nobody now
        }
    }

private:
    SharedStats& stats_;
    unsigned workers_, threads_, count_;
};

}  // namespace cspd
