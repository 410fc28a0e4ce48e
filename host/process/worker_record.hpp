// What the master knows of one worker: its process, and what it is doing about it.
#pragma once

#include "process/restart_backoff.hpp"
#include "process/watchdog.hpp"

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

namespace cspd {

struct WorkerRecord {
    using Clock = std::chrono::steady_clock;

    pid_t pid = 0;
    Clock::time_point started;
    RestartBackoff backoff;
    Watchdog::Mark watchdog;
    bool announced = false;    // "ready" logged for this pid
    std::int64_t died_ns = 0;  // CLOCK_MONOTONIC when the previous one was reaped
    unsigned bank = 0;         // which set of slots it writes (see SlotBanks)
    // The process that takes over, starting in the other bank, until it is ready (WorkerSuccession).
    pid_t successor = 0;
    Clock::time_point next_memory_check{};
    Clock::time_point next_requested_succession{};  // one the worker asked for, at most once a second
    std::int64_t stuck_load_since = 0;  // the loading_since_ns already dealt with (--init-timeout)

    /// The successor serves from now on, in place of the process that was `pid`.
    void promote_successor() {
        pid = std::exchange(successor, 0);
        bank = 1 - bank;
        started = Clock::now();
        watchdog = {};
    }
};

/// "exited with code N" or "killed by signal N (name)", for a waitpid status.
inline std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        const int signal = WTERMSIG(status);
        return std::string("killed by signal ") + std::to_string(signal) + " (" + sigdescr_np(signal) + ")";
    }
    return "exited with code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace cspd
