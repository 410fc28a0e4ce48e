// Fixed-size blocks for what a loop makes and frees again and again, and holds only a while:
// a connection's Work, from its first read until it parks. Blocks are carved from mapped
// 64 KiB slabs, and a slab whose blocks are all free again is unmapped, but for one spare. Why not the heap: freed chunks between the connections that stay would keep an
// idle server's RSS at its busiest; a slab gives its pages back. Loop thread only.
#pragma once

#include <cstddef>

namespace cspd {

class BlockPool {
public:
    static constexpr std::size_t kSlabBytes = 64 * 1024;

    /// Blocks of `block_size` bytes (at most a slab's room), aligned for any type.
    explicit BlockPool(std::size_t block_size);
    /// Empty slabs are unmapped; a slab with blocks still out is unmapped by its last release.
    ~BlockPool();
    BlockPool(const BlockPool&) = delete;
    BlockPool& operator=(const BlockPool&) = delete;

    /// A block; null when the system has no memory left.
    void* allocate() noexcept;
    /// Gives back a block from any BlockPool, even one already destroyed.
    static void release(void* block) noexcept;

    std::size_t slabs() const { return slabs_; }
    std::size_t blocks_out() const { return out_; }

private:
    struct Slab;
    Slab* map_slab() noexcept;
    void link_open(Slab* slab) noexcept;
    void unlink_open(Slab* slab) noexcept;
    void unmap(Slab* slab) noexcept;

    std::size_t block_size_;
    std::size_t per_slab_;
    Slab* open_ = nullptr;  // slabs with a free block, the first one used first
    Slab* all_ = nullptr;   // every slab
    Slab* spare_ = nullptr; // one empty slab kept, used when no other has room
    std::size_t slabs_ = 0;
    std::size_t out_ = 0;
};

}  // namespace cspd
