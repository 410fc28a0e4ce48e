// What crashes add up to in the master: K within the window quarantine a version, a load or init
// crash fences it at once, a quarantine rolls back to the last good version, and whom a worker's
// death is blamed on.
#include "process/crash_ledger.hpp"

#include "stats/quarantine_list.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>

namespace cspd {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct CrashLedgerTest : ::testing::Test {
    SharedStatsMapping shared = SharedStatsMapping::create(16);
    SharedStats& stats = shared.stats();
    const VersionKey v2{"page", 200, 0x2222};
    const Clock::time_point t0 = Clock::now();

    bool quarantined(const VersionKey& key) { return is_quarantined(stats, key.name, key.size, key.hash); }
    std::uint64_t crashes_of(const std::string& name) {
        for (const CrashCount& c : stats.crashes())
            if (name == c.name) return read(c.crashes);
        return 0;
    }
};

TEST_F(CrashLedgerTest, QuarantinesAVersionAtTheKthCrashWithinTheWindowOnly) {
    CrashLedger ledger(stats, 3, 60s);
    ledger.count(v2, t0);
    ledger.count(v2, t0 + 30s);
    ledger.count(v2, t0 + 61s);  // the first fell out of the window: two within it
    EXPECT_FALSE(quarantined(v2));
    ledger.count(v2, t0 + 62s);
    EXPECT_TRUE(quarantined(v2));
    EXPECT_FALSE(quarantined({"page", 200, 0x3333}));  // another build of the same name
    EXPECT_EQ(crashes_of("page"), 4u);
}

TEST_F(CrashLedgerTest, NeverQuarantinesWithALimitOfZero) {
    CrashLedger ledger(stats, 0, 60s);
    for (int i = 0; i < 10; ++i) ledger.count(v2, t0 + std::chrono::seconds(i));
    EXPECT_FALSE(quarantined(v2));
    EXPECT_EQ(crashes_of("page"), 10u);
}

TEST_F(CrashLedgerTest, FencesALoadOrInitCrashAtOnceWithItsPhase) {
    CrashLedger ledger(stats, 3, 60s);
    ledger.fence(v2, HandlerPhase::init);
    EXPECT_TRUE(quarantined(v2));
    EXPECT_EQ(quarantine_phase(stats, v2.name, v2.size, v2.hash), static_cast<std::uint32_t>(HandlerPhase::init));
}

TEST_F(CrashLedgerTest, RollsBackToTheTargetUnlessItIsTheSameOrQuarantinedItself) {
    const VersionKey v1{"page", 100, 0x1111};
    CrashLedger ledger(stats, 1, 60s);
    ledger.roll_back_to([&](const std::string& name) -> std::optional<VersionKey> {
        return name == "page" ? std::optional<VersionKey>(v1) : std::nullopt;
    });
    ledger.count(v2, t0);
    ASSERT_TRUE(quarantined(v2));
    const auto entry = rolled_back_to(stats, "page", v1.size, v1.hash);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->size, v2.size);
    EXPECT_EQ(entry->content_hash, v2.hash);
    // v1 crashes too: no version to give way to, so it answers 503 (no rollback recorded).
    ledger.count(v1, t0);
    EXPECT_TRUE(quarantined(v1));
    EXPECT_FALSE(rolled_back_to(stats, "page", v2.size, v2.hash));
    // A version that is its own target (fenced before anything else served) does not roll back.
    const VersionKey other{"other", 1, 1};
    ledger.roll_back_to([&](const std::string&) { return std::optional<VersionKey>(other); });
    ledger.count(other, t0);
    EXPECT_TRUE(quarantined(other));
    EXPECT_FALSE(rolled_back_to(stats, "other", other.size, other.hash));
}

/// Wait statuses (as waitpid gives them): killed by `signal`, or exited with `code`.
int killed_by(int signal) { return signal; }
int exited(int code) { return code << 8; }

TEST_F(CrashLedgerTest, BlamesTheHandlerTheDyingProcessNamedElseTheOneItsCrashingLoopRan) {
    LoopSlot* slots = &stats.slots[0];
    HandlerStats* page = handler_stats(slots[1], "page");
    ASSERT_NE(page, nullptr);
    page->info.write([](VersionInfo& info) { info.size = 200, info.content_hash = 0x2222; });
    // Loop 1 runs page's call and its thread reported the crash.
    slots[1].running_handler.store(1);
    slots[1].handler_started_ns.store(1);
    slots[1].crashed.store(1);
    auto blamed = blame_for_death(slots, 2, killed_by(SIGSEGV));
    ASSERT_EQ(blamed.size(), 1u);
    EXPECT_EQ(blamed[0].key.name, "page");
    EXPECT_EQ(blamed[0].key.hash, 0x2222u);
    EXPECT_EQ(blamed[0].phase, HandlerPhase::call);
    // An operator's SIGKILL blames nobody the process did not name.
    slots[1].crashed.store(0);
    EXPECT_TRUE(blame_for_death(slots, 2, killed_by(SIGKILL)).empty());
    // What the dying thread named wins, in its phase.
    copy_text(slots[0].blame.name, sizeof slots[0].blame.name, "init_fault");
    slots[0].blame.size = 7;
    slots[0].blame.content_hash = 9;
    slots[0].blame.phase.store(static_cast<std::uint32_t>(HandlerPhase::init));
    blamed = blame_for_death(slots, 2, exited(1));
    ASSERT_EQ(blamed.size(), 1u);
    EXPECT_EQ(blamed[0].key.name, "init_fault");
    EXPECT_EQ(blamed[0].phase, HandlerPhase::init);
}

}  // namespace
}  // namespace cspd
