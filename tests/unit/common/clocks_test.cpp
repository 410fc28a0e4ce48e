#include "common/clocks.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace cspd {
namespace {

TEST(CoarseClock, APassedTimeoutIsNeverEarlyForTheClocksResolution) {
    const std::uint32_t slack = coarse_slack_ms();
    EXPECT_GE(slack, 1u);
    EXPECT_LE(slack, 11u);  // a jiffy is 1 to 10 ms
    const std::uint32_t since = 5000;
    EXPECT_FALSE(coarse_passed(since + 1000, since, 1));  // one second of readings is not surely one second
    EXPECT_FALSE(coarse_passed(since + 1000 + slack - 1, since, 1));
    EXPECT_TRUE(coarse_passed(since + 1000 + slack, since, 1));
    EXPECT_TRUE(coarse_passed(since, since, 0) == (slack == 0));
}

TEST(CoarseClock, DifferencesHoldAcrossTheWrap) {
    const std::uint32_t before_wrap = 0xFFFFFF00u;  // 256 ms before the stamps wrap
    const std::uint32_t after_wrap = before_wrap + 2000 + coarse_slack_ms();  // wraps past zero
    EXPECT_LT(after_wrap, before_wrap);
    EXPECT_TRUE(coarse_passed(after_wrap, before_wrap, 2));
    EXPECT_FALSE(coarse_passed(after_wrap, before_wrap, 3));
    EXPECT_EQ(coarse_later(before_wrap, after_wrap), after_wrap);
    EXPECT_EQ(coarse_later(after_wrap, before_wrap), after_wrap);
    // Twenty days apart (the longest timeout a flag takes) still order right.
    const std::uint32_t twenty_days = 20u * 86400u * 1000u;
    EXPECT_EQ(coarse_later(before_wrap, before_wrap + twenty_days), before_wrap + twenty_days);
}

TEST(CoarseClock, ReadingsMoveForward) {
    const std::uint32_t first = coarse_now_ms();
    std::uint32_t later = first;
    for (int i = 0; i < 1000000 && later == first; ++i) later = coarse_now_ms();
    EXPECT_EQ(coarse_later(first, later), later);
}

}  // namespace
}  // namespace cspd
