// The master's watchdog on a real child process: a call past --handler-timeout aborts the
// worker and counts a crash of that handler; SIGKILL follows if SIGABRT did not end it.
#include "process/watchdog.hpp"

#include "child_process.hpp"
#include "common/clocks.hpp"
#include "stats/quarantine_list.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace cspd {
namespace {
using namespace std::chrono_literals;

struct WatchdogTest : ::testing::Test {
    WatchdogTest() {
        HandlerStats* slow = handler_stats(slots[0], "slow");
        slow->info.write([](VersionInfo& info) { info.size = 10, info.content_hash = 0xabc; });
        slots[0].running_handler.store(1);
    }
    std::uint64_t crashes_of_slow() {
        for (const CrashCount& c : shared.stats().crashes())
            if (std::string_view(c.name) == "slow") return read(c.crashes);
        return 0;
    }
    SharedStatsMapping shared = SharedStatsMapping::create(8);
    LoopSlot* slots = &shared.stats().slots[0];
    CrashLedger ledger{shared.stats(), 1, 60s};
    Watchdog watchdog{2, ledger};
    test::WaitingChild worker;
    Watchdog::Mark mark;
};

TEST_F(WatchdogTest, LeavesACallWithinTheTimeoutAlone) {
    slots[0].handler_started_ns.store(monotonic_now_ns() - 1'500'000'000);  // 1.5 s of 2
    watchdog.check(0, worker.pid(), slots, 1, mark);
    EXPECT_FALSE(mark.fired);
    EXPECT_TRUE(worker.running());
    EXPECT_EQ(crashes_of_slow(), 0u);
}

TEST_F(WatchdogTest, AbortsAWorkerWhoseCallOutranTheTimeoutAndCountsTheCrash) {
    slots[0].handler_started_ns.store(monotonic_now_ns() - 2'500'000'000);
    watchdog.check(0, worker.pid(), slots, 1, mark);
    EXPECT_TRUE(mark.fired);
    EXPECT_EQ(worker.ended_by(), SIGABRT);
    EXPECT_EQ(crashes_of_slow(), 1u);
    EXPECT_TRUE(is_quarantined(shared.stats(), "slow", 10, 0xabc));  // one crash quarantines, here
}

TEST_F(WatchdogTest, KillsAWorkerThatOutlivedItsAbortByTwoSeconds) {
    mark.fired = true;
    mark.at = Watchdog::Clock::now() - 1s;
    watchdog.check(0, worker.pid(), slots, 1, mark);
    EXPECT_TRUE(worker.running());  // still within its two seconds
    mark.at = Watchdog::Clock::now() - 3s;
    watchdog.check(0, worker.pid(), slots, 1, mark);
    EXPECT_EQ(worker.ended_by(), SIGKILL);
}

}  // namespace
}  // namespace cspd
