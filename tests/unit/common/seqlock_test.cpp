#include "common/seqlock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>

namespace cspd {
namespace {

struct Pair {
    std::uint64_t a = 0, b = 0;  // the writer keeps them equal: a torn read would differ
};

TEST(Seqlock, ReadsWhatWasWritten) {
    Seqlock<Pair> lock;
    lock.write([](Pair& p) { p.a = p.b = 7; });
    const Pair p = lock.read();
    EXPECT_EQ(p.a, 7u);
    EXPECT_EQ(p.b, 7u);
    EXPECT_EQ(lock.visit([](const Pair& v) { return v.a + v.b; }), 14u);
}

TEST(Seqlock, ReadersNeverSeeHalfAnUpdate) {
    Seqlock<Pair> lock;
    std::atomic<bool> reading{false}, stop{false};
    std::thread writer([&] {
        // On a loaded machine the writer could finish before the reader first runs: wait for it,
        // so that reads and writes overlap.
        while (!reading) std::this_thread::yield();
        for (std::uint64_t i = 1; i <= 200000; ++i) lock.write([i](Pair& p) { p.a = i, p.b = i; });
        stop = true;
    });
    std::uint64_t reads = 0, torn = 0, last = 0, backwards = 0;
    reading = true;
    do {
        const Pair p = lock.read();
        ++reads;
        torn += p.a != p.b;
        backwards += p.a < last;
        last = p.a;
    } while (!stop);
    writer.join();
    EXPECT_GT(reads, 0u);
    EXPECT_EQ(torn, 0u);
    EXPECT_EQ(backwards, 0u);
    EXPECT_EQ(lock.read().a, 200000u);
}

TEST(Seqlock, AWriterThatDiedMidUpdateDoesNotHangReadersOrTheNextWriter) {
    Seqlock<Pair> lock;
    lock.write([](Pair& p) { p.a = p.b = 1; });
    // A writer in another process that died between its two stores leaves the count odd.
    // The count is the lock's first member (it is standard-layout): set it as that writer left it.
    static_assert(std::is_standard_layout_v<Seqlock<Pair>>);
    reinterpret_cast<std::atomic<std::uint32_t>*>(&lock)->store(3);
    const Pair seen = lock.read();  // bounded: returns, whatever it saw
    EXPECT_EQ(seen.a, 1u);
    lock.write([](Pair& p) { p.a = p.b = 2; });
    EXPECT_EQ(reinterpret_cast<std::atomic<std::uint32_t>*>(&lock)->load() % 2, 0u);  // even again: whole
    EXPECT_EQ(lock.read().b, 2u);
}

}  // namespace
}  // namespace cspd
