// The registry tells every loop's table of each change; a table finds what it was told,
// records it in its loop's counters for /-/status, and lets an old version go.
#include "handler/loader.hpp"
#include "handler/registry.hpp"
#include "handler/table.hpp"
#include "stats/shared_stats.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

struct RegistryTableTest : ::testing::Test {
    RegistryTableTest() {
        for (HandlerTable* table : {&first, &second})
            registry.subscribe([table](const std::string& name, std::shared_ptr<const HandlerVersion> version) {
                table->set(name, std::move(version));
            });
        registry.subscribe_refusals(
            [this](const std::string& name, const std::string& reason) { first.note_refusal(name, reason, true); });
        first.attach_stats(shared.stats().slots[0]);
    }
    std::shared_ptr<HandlerVersion> load(const std::string& name, const std::string& file) {
        LoadResult r = loader.load(name, test::test_handler(file));
        EXPECT_TRUE(r.version) << r.reason;
        return r.version;
    }

    test::TempDir scratch;
    HandlerLoader loader{scratch.path()};
    SharedStatsMapping shared = SharedStatsMapping::create(128);
    HandlerRegistry registry;
    HandlerTable first, second;
};

TEST_F(RegistryTableTest, EveryTableFollowsInstallAndRemove) {
    registry.install(load("echo", "echo.so"));
    ASSERT_NE(first.find("echo"), nullptr);
    ASSERT_NE(second.find("echo"), nullptr);
    EXPECT_EQ(first.find("echo"), second.find("echo"));  // one version, shared
    EXPECT_EQ(registry.names(), std::vector<std::string>{"echo"});
    registry.remove("echo");
    EXPECT_EQ(first.find("echo"), nullptr);
    EXPECT_EQ(second.find("echo"), nullptr);
    EXPECT_EQ(registry.current("echo"), nullptr);
    registry.remove("echo");  // absent: nothing happens
    EXPECT_EQ(first.size(), 0u);
}

TEST_F(RegistryTableTest, AReplacedVersionIsReleasedByEveryHolder) {
    std::weak_ptr<HandlerVersion> old;
    {
        auto v1 = load("versioned", "v1/versioned.so");
        old = v1;
        registry.install(std::move(v1));
    }
    registry.install(load("versioned", "v2/versioned.so"));
    EXPECT_TRUE(old.expired());  // registry and both tables let go: cleanup ran, the library unloaded
    EXPECT_EQ(first.find("versioned")->sequence(), registry.current("versioned")->sequence());
}

TEST_F(RegistryTableTest, RecordsVersionsAndRefusalsInTheLoopsCounters) {
    auto version = load("echo", "echo.so");
    const HandlerFileIdentity file = version->file();
    registry.install(std::move(version));
    HandlerStats* stats = first.find_entry("echo")->stats;
    ASSERT_NE(stats, nullptr);
    VersionInfo info = snapshot(stats->info);
    EXPECT_STREQ(info.name, "echo");
    EXPECT_TRUE(info.live);
    EXPECT_EQ(info.size, file.size);
    EXPECT_EQ(info.content_hash, file.content_hash);
    EXPECT_EQ(second.find_entry("echo")->stats, nullptr);  // no counters attached there

    registry.refused("echo", "init returned 7");
    info = snapshot(stats->info);
    EXPECT_STREQ(info.refusal, "init returned 7");
    EXPECT_TRUE(info.live);  // the live version keeps serving
    EXPECT_EQ(read(stats->refusals), 1u);

    registry.remove("echo");
    EXPECT_FALSE(snapshot(stats->info).live);
}

}  // namespace
}  // namespace cspd

namespace cspd {
namespace {

TEST(HandlerTableCounters, RemovedNamesFreeTheirCountersOnceNothingHoldsTheirVersion) {
    test::TempDir scratch;
    HandlerLoader loader{scratch.path()};
    SharedStatsMapping shared = SharedStatsMapping::create(16);  // --max-handlers 16
    HandlerTable table;
    table.attach_stats(shared.stats().slots[0]);
    const auto version = loader.load("echo", test::test_handler("echo.so")).version;
    ASSERT_TRUE(version);
    // Every entry of the slot holds a live name.
    ASSERT_EQ(shared.stats().slots[0].handlers().size(), 16u);
    for (unsigned i = 0; i < 16; ++i) table.set("h" + std::to_string(i), version);
    table.set("late", version);
    EXPECT_EQ(table.find_entry("late")->stats, nullptr);  // served, not counted (and said in the log)
    // A removed name whose version something still holds (a deferred reply) keeps its counters...
    table.set("h0", nullptr);  // `version` is still held here (and by 14 other names)
    table.set("other", version);
    EXPECT_EQ(table.find_entry("other")->stats, nullptr);
    // ...and gives them up once nothing does: the next name gets them, zeroed.
    auto own = loader.load("echo", test::test_handler("echo.so")).version;
    table.set("h1", own);
    own.reset();
    bump(table.find_entry("h1")->stats->requests[1], 7);  // h1 served a while
    table.set("h1", nullptr);  // the table held the last reference to h1's version
    table.set("other", version);
    HandlerStats* stats = table.find_entry("other")->stats;
    ASSERT_NE(stats, nullptr);
    EXPECT_EQ(std::string(snapshot(stats->info).name), "other");
    EXPECT_EQ(read(stats->requests[1]), 0u);
}

}  // namespace
}  // namespace cspd
