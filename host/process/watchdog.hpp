// The master's watchdog: a handler call that has run longer than --handler-timeout gets
// its worker aborted on the stuck loop thread (so that the crash report's backtrace shows
// the handler), counted as a crash of that handler; SIGKILL follows if SIGABRT did not end it.
#pragma once

#include "process/crash_ledger.hpp"

#include <sys/types.h>

#include <chrono>

namespace cspd {

class Watchdog {
public:
    using Clock = std::chrono::steady_clock;

    /// What the watchdog keeps per worker.
    struct Mark {
        bool fired = false;
        Clock::time_point at;
    };

    Watchdog(unsigned timeout_s, CrashLedger& ledger) : timeout_s_(timeout_s), ledger_(ledger) {}

    bool enabled() const { return timeout_s_ > 0; }

    /// Looks at the loops `slots` of worker `index` (process `pid`), once a tick.
    void check(unsigned index, pid_t pid, LoopSlot* slots, unsigned count, Mark& mark);

private:
    unsigned timeout_s_;
    CrashLedger& ledger_;
};

}  // namespace cspd
