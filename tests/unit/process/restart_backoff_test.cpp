// When the master starts a dead worker again: at once, until it keeps dying young.
#include "process/restart_backoff.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {
using namespace std::chrono_literals;
using Clock = RestartBackoff::Clock;

TEST(RestartBackoff, TheThirdYoungDeathInARowWaitsThenEachWaitsTwiceAsLongUpToFiveSeconds) {
    RestartBackoff backoff;
    const Clock::time_point t0{};
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration::zero());
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration::zero());
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration(100ms));
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration(200ms));
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration(400ms));
    for (int i = 0; i < 10; ++i) backoff.after_death(t0, t0 + 1s);
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration(5s));
    EXPECT_EQ(backoff.quick_deaths(), 16u);
}

TEST(RestartBackoff, ADeathAfterALongLifeStartsTheCountAgain) {
    RestartBackoff backoff;
    const Clock::time_point t0{};
    for (int i = 0; i < 5; ++i) backoff.after_death(t0, t0 + 1s);
    EXPECT_EQ(backoff.after_death(t0, t0 + 10s), Clock::duration::zero());  // lived 10 s: not young
    EXPECT_EQ(backoff.quick_deaths(), 0u);
    // Two young deaths after it restart at once; the third in a row waits.
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration::zero());
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration::zero());
    EXPECT_EQ(backoff.after_death(t0, t0 + 1s), Clock::duration(100ms));
}

}  // namespace
}  // namespace cspd
