#include "stats/quarantine_list.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

namespace cspd {
namespace {

TEST(QuarantineList, FindsExactlyTheVersionsAdded) {
    SharedStatsMapping shared = SharedStatsMapping::create(128);
    SharedStats& stats = shared.stats();
    EXPECT_FALSE(is_quarantined(stats, "crash", 100, 0xabc));
    add_to_quarantine(stats, "crash", 100, 0xabc);
    EXPECT_TRUE(is_quarantined(stats, "crash", 100, 0xabc));
    EXPECT_FALSE(is_quarantined(stats, "crash", 100, 0xabd));  // another build of the same handler
    EXPECT_FALSE(is_quarantined(stats, "crash", 101, 0xabc));
    EXPECT_FALSE(is_quarantined(stats, "cras", 100, 0xabc));  // a prefix is not the name
    EXPECT_FALSE(is_quarantined(stats, "crashy", 100, 0xabc));
    EXPECT_EQ(stats.quarantined.load(), 1u);
}

TEST(QuarantineList, WhenFullTheOldestMakesRoom) {
    SharedStatsMapping shared = SharedStatsMapping::create(128);
    SharedStats& stats = shared.stats();
    for (unsigned i = 0; i <= kMaxQuarantined; ++i) add_to_quarantine(stats, "h" + std::to_string(i), i, i);
    EXPECT_FALSE(is_quarantined(stats, "h0", 0, 0));
    EXPECT_TRUE(is_quarantined(stats, "h1", 1, 1));
    EXPECT_TRUE(is_quarantined(stats, "h" + std::to_string(kMaxQuarantined), kMaxQuarantined, kMaxQuarantined));
    EXPECT_EQ(stats.quarantined.load(), kMaxQuarantined);
}

TEST(QuarantineList, IsSharedWithWhoeverMapsTheSameSegment) {
    SharedStatsMapping shared = SharedStatsMapping::create(128);
    SharedStatsMapping worker = SharedStatsMapping::attach(::dup(shared.fd()));
    add_to_quarantine(shared.stats(), "crash", 1, 2);
    EXPECT_TRUE(is_quarantined(worker.stats(), "crash", 1, 2));
}

}  // namespace
}  // namespace cspd
