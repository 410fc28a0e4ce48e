// Replacing a worker that has not crashed: one over --worker-max-rss, or one whose loader is stuck
// in a handler's load or init past --init-timeout. A successor starts in the other bank of slots
// and takes over once all its loops are ready; the process it replaces drains (and is killed if it
// has not gone within --drain-timeout + 2 s). With one bank only, the worker is signalled and its
// ordinary restart replaces it.
#pragma once

#include "process/config.hpp"
#include "process/crash_ledger.hpp"
#include "process/slot_banks.hpp"
#include "process/worker_record.hpp"

#include <sys/types.h>

#include <functional>
#include <map>
#include <vector>

namespace cspd {

class WorkerSuccession {
public:
    /// Starts worker `index`'s process writing bank `bank`: its pid, or -1 if it could not.
    using StartProcess = std::function<pid_t(unsigned index, unsigned bank)>;

    WorkerSuccession(const Config& config, std::vector<WorkerRecord>& workers, const SlotBanks& banks,
                     CrashLedger& ledger, StartProcess start);

    /// The master's tick: successors that are ready take over; workers over their memory limit or
    /// stuck loading get successors (unless `stopping`); replaced processes past their drain time are killed.
    void tick(bool stopping);

    /// A child was reaped: true if it was a draining replaced process or a successor (dealt with here).
    bool reaped(pid_t pid, int status);

    /// Worker `index` died while its successor was starting: the successor takes over. False if it had none.
    bool take_over_after_death(unsigned index);

private:
    /// A process that was replaced and is draining: reaped without a restart, killed if it has not
    /// gone by `kill_at` (a thread stuck in a handler's init cannot drain).
    struct Retiring {
        unsigned index = 0, bank = 0;
        WorkerRecord::Clock::time_point kill_at{};
        bool killed = false;
    };

    void check_successors();
    void check_memory();
    void check_loading();
    void check_requests();
    void check_retiring();
    void replace(unsigned index, int signal);
    void hand_over(unsigned index);
    void clear_slots(unsigned index, unsigned bank);

    const Config& config_;
    std::vector<WorkerRecord>& workers_;
    const SlotBanks& banks_;
    CrashLedger& ledger_;
    StartProcess start_;
    std::map<pid_t, Retiring> retiring_;
};

}  // namespace cspd
