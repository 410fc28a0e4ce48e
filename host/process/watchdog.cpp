#include "process/watchdog.hpp"

#include "common/clocks.hpp"

#include <spdlog/spdlog.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>

namespace cspd {
using namespace std::chrono_literals;

void Watchdog::check(unsigned index, pid_t pid, LoopSlot* slots, unsigned count, Mark& mark) {
    if (mark.fired) {
        // SIGABRT should have ended it; a handler that blocks or catches it gets SIGKILL.
        if (Clock::now() - mark.at > 2s) ::kill(pid, SIGKILL);
        return;
    }
    const std::int64_t now = monotonic_now_ns();
    const std::int64_t limit = std::int64_t(timeout_s_) * 1'000'000'000;
    for (unsigned t = 0; t < count; ++t) {
        LoopSlot& slot = slots[t];
        const std::int64_t started = slot.handler_started_ns.load();
        if (started == 0 || now - started < limit) continue;
        const std::uint32_t running = slot.running_handler.load();
        // The call may have ended and another begun between the two reads: look again next tick.
        if (slot.handler_started_ns.load(std::memory_order_acquire) != started) continue;
        const VersionKey key = running_version(slot, running);
        spdlog::error("watchdog: handler {} has been running for {:.1f} s in worker {} (pid {}), more than "
                      "--handler-timeout {} s; aborting the worker",
                      key.name.empty() ? "(untracked)" : key.name, double(now - started) * 1e-9, index, pid,
                      timeout_s_);
        mark.fired = true;
        mark.at = Clock::now();
        if (!key.name.empty()) ledger_.count(key);
        // Aimed at the stuck loop thread, so that the crash report's backtrace shows the handler.
        const pid_t tid = slot.thread_id.load();
        if (tid == 0 || ::syscall(SYS_tgkill, pid, tid, SIGABRT) != 0) ::kill(pid, SIGABRT);
        return;
    }
}

}  // namespace cspd
