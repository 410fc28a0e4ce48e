// The budget HTTP/2 (and per-client limits) spend: a burst at once, then a steady rate, never
// more than the burst saved up, and a clock that wraps changes nothing.
#include "common/token_bucket.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace cspd {
namespace {

int taken(TokenBucket& bucket, std::uint32_t now_ms, int tries) {
    int n = 0;
    for (int i = 0; i < tries; ++i) n += bucket.take(now_ms) ? 1 : 0;
    return n;
}

TEST(TokenBucket, ABurstAtOnceThenTheRateEachSecond) {
    TokenBucket bucket(10, 4, 1000);
    EXPECT_EQ(taken(bucket, 1000, 50), 10);  // the burst, no more
    EXPECT_EQ(taken(bucket, 1250, 50), 1);   // a quarter second earns one
    EXPECT_EQ(taken(bucket, 2250, 50), 4);   // a second earns four
}

TEST(TokenBucket, SavesUpNoMoreThanTheBurst) {
    TokenBucket bucket(3, 100, 0);
    EXPECT_EQ(taken(bucket, 60'000, 1000), 3);  // a minute idle is worth the burst, not 6,000
}

TEST(TokenBucket, AClockThatWrapsKeepsCounting) {
    const std::uint32_t before_wrap = 0xFFFF'FF00u;  // 256 ms before the 32-bit wrap
    TokenBucket bucket(2, 10, before_wrap);
    EXPECT_EQ(taken(bucket, before_wrap, 10), 2);
    EXPECT_EQ(taken(bucket, before_wrap + 500u, 10), 2);  // past the wrap: 500 ms earn 5, capped at 2
}

}  // namespace
}  // namespace cspd
