// Replacing a worker that did not crash, on real child processes: a loader stuck past
// --init-timeout fences its version and gets a successor in the other bank of slots, which
// takes over once ready while the old process is told to drain.
#include "process/worker_succession.hpp"

#include "child_process.hpp"
#include "common/clocks.hpp"
#include "stats/quarantine_list.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

namespace cspd {
namespace {
using namespace std::chrono_literals;

struct WorkerSuccessionTest : ::testing::Test {
    WorkerSuccessionTest() {
        config.workers = 1;
        config.threads = 1;
        config.init_timeout_s = 10;
        config.drain_timeout_s = 0;
        workers[0].pid = old_worker.pid();
        workers[0].bank = 0;
    }
    /// The old worker's loader has been in `name`'s init for `seconds`.
    void loading(const char* name, std::int64_t seconds) {
        LoopSlot& first = banks.slots(0, 0)[0];
        copy_text(first.loading.name, sizeof first.loading.name, name);
        first.loading.size = 5;
        first.loading.content_hash = 0x55;
        first.loading.phase.store(static_cast<std::uint32_t>(HandlerPhase::init));
        first.loading_since_ns.store(monotonic_now_ns() - seconds * 1'000'000'000);
    }

    Config config;
    SharedStatsMapping shared = SharedStatsMapping::create(8);
    SlotBanks banks{shared.stats(), 1, 1};
    CrashLedger ledger{shared.stats(), 3, 60s};
    std::vector<WorkerRecord> workers = std::vector<WorkerRecord>(1);
    test::WaitingChild old_worker, successor;
    std::vector<unsigned> started_banks;
    WorkerSuccession succession{config, workers, banks, ledger, [this](unsigned, unsigned bank) {
                                    started_banks.push_back(bank);
                                    return successor.pid();
                                }};
};

TEST_F(WorkerSuccessionTest, ALoadWithinTheInitTimeoutIsLeftAlone) {
    loading("slow_init", 9);
    succession.tick(false);
    EXPECT_TRUE(started_banks.empty());
    EXPECT_FALSE(is_quarantined(shared.stats(), "slow_init", 5, 0x55));
}

TEST_F(WorkerSuccessionTest, AStuckInitIsFencedOnceAndItsWorkerHandsOverToASuccessorOnceReady) {
    loading("stuck", 11);
    succession.tick(false);
    EXPECT_TRUE(is_quarantined(shared.stats(), "stuck", 5, 0x55));
    ASSERT_EQ(started_banks, std::vector<unsigned>{1});  // the other bank
    EXPECT_EQ(workers[0].successor, successor.pid());
    EXPECT_EQ(workers[0].pid, old_worker.pid());  // serves on until the successor is ready
    succession.tick(false);
    EXPECT_EQ(started_banks.size(), 1u);  // the same stuck load is dealt with once
    EXPECT_TRUE(old_worker.running());

    banks.slots(0, 1)[0].ready.store(1);
    succession.tick(false);
    EXPECT_EQ(workers[0].pid, successor.pid());
    EXPECT_EQ(workers[0].bank, 1u);
    EXPECT_EQ(workers[0].successor, 0);
    EXPECT_EQ(old_worker.ended_by(), SIGTERM);  // told to drain
    EXPECT_TRUE(succession.reaped(old_worker.pid(), SIGTERM));  // a retiring process: no restart
    EXPECT_FALSE(succession.reaped(old_worker.pid(), SIGTERM));
}

TEST_F(WorkerSuccessionTest, NothingIsReplacedWhileStopping) {
    loading("stuck", 11);
    succession.tick(true);
    EXPECT_TRUE(started_banks.empty());
}

TEST_F(WorkerSuccessionTest, ASuccessorThatDiesBeforeItIsReadyLeavesTheOldWorkerServing) {
    loading("stuck", 11);
    succession.tick(false);
    ASSERT_EQ(workers[0].successor, successor.pid());
    EXPECT_TRUE(succession.reaped(successor.pid(), SIGSEGV));
    EXPECT_EQ(workers[0].successor, 0);
    EXPECT_EQ(workers[0].pid, old_worker.pid());
}

}  // namespace
}  // namespace cspd
