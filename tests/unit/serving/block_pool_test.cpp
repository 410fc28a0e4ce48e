// BlockPool: distinct aligned blocks, reuse before growth, empty slabs unmapped but one spare,
// and blocks that outlive their pool.
#include "serving/block_pool.hpp"
#include "sanitizers.hpp"

#include <gtest/gtest.h>

#if defined(CSPD_TEST_ASAN)
#include <sanitizer/asan_interface.h>
#endif

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace cspd {
namespace {

constexpr std::size_t kBlock = 440;  // about a Connection::Work

// How many blocks of kBlock fill one slab, found by allocating until a second slab is mapped.
std::size_t blocks_per_slab() {
    BlockPool pool(kBlock);
    std::vector<void*> out;
    while (pool.slabs() < 2) out.push_back(pool.allocate());
    for (void* block : out) BlockPool::release(block);
    return out.size() - 1;
}

bool mapped(const void* address) {
    unsigned char resident = 0;
    auto page = reinterpret_cast<std::uintptr_t>(address) & ~std::uintptr_t(::sysconf(_SC_PAGESIZE) - 1);
    return ::mincore(reinterpret_cast<void*>(page), 1, &resident) == 0;  // ENOMEM: not mapped
}

TEST(BlockPool, BlocksAreDistinctAlignedAndWritable) {
    BlockPool pool(kBlock);
    std::set<void*> seen;
    std::vector<void*> out;
    for (int i = 0; i < 1000; ++i) {
        void* block = pool.allocate();
        ASSERT_NE(block, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block) % alignof(std::max_align_t), 0u);
        std::memset(block, i & 0xff, kBlock);
        EXPECT_TRUE(seen.insert(block).second);
        out.push_back(block);
    }
    for (std::size_t i = 0; i < out.size(); ++i)  // no block overlaps the next one's bytes
        EXPECT_EQ(static_cast<unsigned char*>(out[i])[kBlock - 1], static_cast<unsigned char>(i & 0xff));
    EXPECT_EQ(pool.blocks_out(), 1000u);
    EXPECT_GE(pool.slabs(), 1000 * kBlock / BlockPool::kSlabBytes + 1);
    for (void* block : out) BlockPool::release(block);
    EXPECT_EQ(pool.blocks_out(), 0u);
}

TEST(BlockPool, AReleasedBlockIsReusedBeforeNewOnes) {
    BlockPool pool(kBlock);
    void* a = pool.allocate();
    void* b = pool.allocate();
    BlockPool::release(a);
    EXPECT_EQ(pool.allocate(), a);
    BlockPool::release(a);
    BlockPool::release(b);
}

TEST(BlockPool, SlabsWhoseBlocksAllCameBackAreUnmappedButOneSpare) {
    const std::size_t per_slab = blocks_per_slab();
    ASSERT_GT(per_slab, 100u);  // 64 KiB of 440-byte blocks
    BlockPool pool(kBlock);
    std::vector<void*> out;
    for (std::size_t i = 0; i < 10 * per_slab; ++i) out.push_back(pool.allocate());
    EXPECT_EQ(pool.slabs(), 10u);
    // A whole connection load parks: all but one slab go back to the system.
    for (void* block : out) BlockPool::release(block);
    EXPECT_EQ(pool.slabs(), 1u);
    std::size_t still_mapped = 0;
    for (std::size_t i = 0; i < out.size(); i += per_slab) still_mapped += mapped(out[i]);
    EXPECT_EQ(still_mapped, 1u);
    // One connection busy again and again maps nothing more.
    for (int i = 0; i < 1000; ++i) BlockPool::release(pool.allocate());
    EXPECT_EQ(pool.slabs(), 1u);
}

TEST(BlockPool, ConnectionsWakingAcrossASlabsEdgeDoNotMapASlabEachTime) {
    const std::size_t per_slab = blocks_per_slab();
    BlockPool pool(kBlock);
    std::vector<void*> out;
    for (std::size_t i = 0; i < per_slab - 1; ++i) out.push_back(pool.allocate());
    for (int round = 0; round < 100; ++round) {
        void* x = pool.allocate();  // fills the first slab
        void* y = pool.allocate();  // needs a second
        BlockPool::release(x);
        BlockPool::release(y);
        EXPECT_EQ(pool.slabs(), 2u);  // the second stays as the spare, and is used again
    }
    for (void* block : out) BlockPool::release(block);
    EXPECT_EQ(pool.slabs(), 1u);
}

TEST(BlockPool, ASlabWithOneBlockOutStays) {
    const std::size_t per_slab = blocks_per_slab();
    BlockPool pool(kBlock);
    std::vector<void*> out;
    for (std::size_t i = 0; i < 3 * per_slab; ++i) out.push_back(pool.allocate());
    void* kept = out[per_slab + 5];  // in the second slab
    for (void* block : out)
        if (block != kept) BlockPool::release(block);
    EXPECT_EQ(pool.slabs(), 2u);  // the one with `kept`, and the spare
    std::memset(kept, 0x5a, kBlock);  // still mapped and ours
    EXPECT_TRUE(mapped(kept));
    // New blocks come from the slab in use, not the spare.
    void* next = pool.allocate();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(next) / BlockPool::kSlabBytes,
              reinterpret_cast<std::uintptr_t>(kept) / BlockPool::kSlabBytes);
    BlockPool::release(next);
    BlockPool::release(kept);
    EXPECT_EQ(pool.slabs(), 1u);
}

TEST(BlockPool, ABlockReleasedAfterItsPoolIsGoneUnmapsItsSlab) {
    void* late = nullptr;
    void* later = nullptr;
    {
        BlockPool pool(kBlock);
        late = pool.allocate();
        later = pool.allocate();  // the same slab
        ASSERT_NE(late, nullptr);
        ASSERT_NE(later, nullptr);
    }
    EXPECT_TRUE(mapped(late));
    std::memset(late, 1, kBlock);
    BlockPool::release(late);
    EXPECT_TRUE(mapped(later));
    BlockPool::release(later);  // the last one out unmaps the slab
    EXPECT_FALSE(mapped(later));
}

#if defined(CSPD_TEST_ASAN)
// A parked connection's Work used after it went back is caught, as on the heap.
TEST(BlockPool, AFreeBlockIsPoisonedUnderAddressSanitizer) {
    BlockPool pool(kBlock);
    char* block = static_cast<char*>(pool.allocate());
    char* untouched = static_cast<char*>(pool.allocate());
    EXPECT_FALSE(__asan_region_is_poisoned(block, kBlock));
    BlockPool::release(block);
    EXPECT_TRUE(__asan_address_is_poisoned(block));
    EXPECT_TRUE(__asan_address_is_poisoned(block + kBlock - 1));
    EXPECT_FALSE(__asan_region_is_poisoned(untouched, kBlock)) << "a neighbour still out stays usable";
    char* again = static_cast<char*>(pool.allocate());
    EXPECT_EQ(again, block);
    EXPECT_FALSE(__asan_region_is_poisoned(again, kBlock));
    BlockPool::release(again);
    BlockPool::release(untouched);
}
#endif

TEST(BlockPool, RefusesBlocksLargerThanASlab) {
    EXPECT_THROW(BlockPool{BlockPool::kSlabBytes}, std::bad_alloc);
}

}  // namespace
}  // namespace cspd
