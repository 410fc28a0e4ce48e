// The shared counters' segment: --max-handlers entries per loop, reached from any mapping of it.
#include "stats/shared_stats.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace cspd {
namespace {

TEST(SharedStats, EachLoopHasAsManyHandlerEntriesAsAskedAndNoneShared) {
    SharedStatsMapping shared = SharedStatsMapping::create(300);
    SharedStats& stats = shared.stats();
    EXPECT_EQ(stats.crashes().size(), 300u);
    for (unsigned s = 0; s < kMaxSlots; ++s) ASSERT_EQ(stats.slots[s].handlers().size(), 300u);
    // The last entry of one loop ends where the next loop's first begins.
    EXPECT_EQ(stats.slots[0].handlers().data() + 300, stats.slots[1].handlers().data());
    for (unsigned i = 0; i < 300; ++i) ASSERT_NE(handler_stats(stats.slots[0], "h" + std::to_string(i)), nullptr);
    EXPECT_EQ(handler_stats(stats.slots[0], "one more"), nullptr);  // full
    EXPECT_EQ(stats.slots[1].handlers()[0].in_use.load(), kStatsNeverUsed);
}

TEST(SharedStats, AnotherMappingSeesTheSameEntriesAtItsOwnAddress) {
    SharedStatsMapping shared = SharedStatsMapping::create(40);
    SharedStatsMapping worker = SharedStatsMapping::attach(::dup(shared.fd()));
    ASSERT_NE(&worker.stats(), &shared.stats());
    HandlerStats* written = handler_stats(worker.stats().slots[5], "hello");
    ASSERT_NE(written, nullptr);
    bump(written->requests[1], 3);
    const HandlerStats& seen = shared.stats().slots[5].handlers()[0];
    EXPECT_EQ(std::string(snapshot(seen.info).name), "hello");
    EXPECT_EQ(read(seen.requests[1]), 3u);
    EXPECT_EQ(worker.stats().slots[5].handlers().size(), 40u);
}

TEST(SharedStats, EntriesCostMemoryOnlyOnceCounted) {
    // The largest --max-handlers reserves 64 loops x 4096 entries (over 100 MiB); untouched,
    // they take no memory.
    SharedStatsMapping shared = SharedStatsMapping::create(kMaxHandlerNames);
    handler_stats(shared.stats().slots[0], "hello");
    struct stat file {};
    ASSERT_EQ(::fstat(shared.fd(), &file), 0);
    EXPECT_GT(static_cast<std::size_t>(file.st_size), std::size_t{100} << 20);
    EXPECT_LT(static_cast<std::size_t>(file.st_blocks) * 512, std::size_t{1} << 20);
}

TEST(SharedStats, ADescriptorThatIsNotTheSegmentIsRefused) {
    const int fd = ::memfd_create("not-cspd", 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 1 << 20), 0);
    EXPECT_THROW(SharedStatsMapping::attach(fd), std::runtime_error);
    ::close(fd);
}

}  // namespace
}  // namespace cspd
