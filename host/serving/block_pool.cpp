#include "serving/block_pool.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define CSPD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CSPD_ASAN 1
#endif
#endif

#if defined(CSPD_ASAN)
#include <sanitizer/asan_interface.h>
// Under ASan a block is poisoned while it is free, so a use of a parked connection's Work is
// caught as it would be on the heap.
#define CSPD_POISON(address, size) ASAN_POISON_MEMORY_REGION(address, size)
#define CSPD_UNPOISON(address, size) ASAN_UNPOISON_MEMORY_REGION(address, size)
#else
#define CSPD_POISON(address, size) ((void)(address), (void)(size))
#define CSPD_UNPOISON(address, size) ((void)(address), (void)(size))
#endif

namespace cspd {

// A slab starts with this header; its blocks follow. A block finds its slab by rounding its
// address down to kSlabBytes, which is why slabs are mapped aligned.
struct BlockPool::Slab {
    BlockPool* pool;         // null once the pool is gone: the last release unmaps the slab
    Slab* open_prev;         // in the pool's open list, while the slab has a free block
    Slab* open_next;
    Slab* all_prev;          // in the pool's list of every slab
    Slab* all_next;
    void* free;              // blocks given back, linked through their first bytes
    std::size_t carved;      // blocks handed out from the rest, whose pages are not touched before
    std::size_t live;        // blocks out
    std::size_t block_size;  // the pool's, for a slab whose pool is gone
    bool open;
};

namespace {
constexpr std::size_t kAlign = alignof(std::max_align_t);
constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void unmap_slab(void* slab) noexcept {
    CSPD_UNPOISON(slab, BlockPool::kSlabBytes);  // the range may be mapped again for something else
    ::munmap(slab, BlockPool::kSlabBytes);
}
}  // namespace

BlockPool::BlockPool(std::size_t block_size)
    : block_size_(round_up(block_size < sizeof(void*) ? sizeof(void*) : block_size, kAlign)),
      per_slab_((kSlabBytes - round_up(sizeof(Slab), kAlign)) / block_size_) {
    if (per_slab_ == 0) throw std::bad_alloc();
}

BlockPool::~BlockPool() {
    for (Slab* slab = all_; slab;) {
        Slab* next = slab->all_next;
        if (slab->live == 0) {
            unmap_slab(slab);
        } else {
            slab->pool = nullptr;  // blocks still out (a bug elsewhere): the last release unmaps it
        }
        slab = next;
    }
}

void* BlockPool::allocate() noexcept {
    // The spare is used last: it stays whole while other slabs have room.
    Slab* slab = open_ == spare_ && open_ && open_->open_next ? open_->open_next : open_;
    if (!slab) {
        slab = map_slab();
        if (!slab) return nullptr;
        link_open(slab);
    }
    void* block;
    if (slab->free) {
        block = slab->free;
        CSPD_UNPOISON(block, block_size_);
        slab->free = *static_cast<void**>(block);
    } else {
        block = reinterpret_cast<char*>(slab) + round_up(sizeof(Slab), kAlign) + slab->carved * block_size_;
        CSPD_UNPOISON(block, block_size_);
        ++slab->carved;
    }
    ++slab->live;
    ++out_;
    if (slab == spare_) spare_ = nullptr;
    if (!slab->free && slab->carved == per_slab_) unlink_open(slab);  // full
    return block;
}

void BlockPool::release(void* block) noexcept {
    if (!block) return;
    Slab* slab = reinterpret_cast<Slab*>(reinterpret_cast<std::uintptr_t>(block) & ~(kSlabBytes - 1));
    BlockPool* pool = slab->pool;
    *static_cast<void**>(block) = slab->free;
    slab->free = block;
    CSPD_POISON(block, slab->block_size);
    --slab->live;
    if (!pool) {
        if (slab->live == 0) unmap_slab(slab);
        return;
    }
    --pool->out_;
    if (!slab->open) pool->link_open(slab);
    if (slab->live > 0) return;
    // All free again: its pages go back to the system, but for one empty slab kept, so that
    // connections waking and parking across a slab's edge do not map and unmap one each time.
    if (!pool->spare_) {
        pool->spare_ = slab;
    } else {
        pool->unmap(slab);
    }
}

BlockPool::Slab* BlockPool::map_slab() noexcept {
    // Twice the size, then the unaligned ends are given back.
    void* area = ::mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<std::uintptr_t>(area);
    const std::uintptr_t aligned = round_up(start, kSlabBytes);
    if (aligned > start) ::munmap(area, aligned - start);
    const std::uintptr_t end = aligned + kSlabBytes;
    if (end < start + 2 * kSlabBytes) ::munmap(reinterpret_cast<void*>(end), start + 2 * kSlabBytes - end);
    Slab* slab = new (reinterpret_cast<void*>(aligned)) Slab{this, nullptr, nullptr, nullptr, all_, nullptr, 0, 0, block_size_, false};
    const std::size_t header = round_up(sizeof(Slab), kAlign);
    CSPD_POISON(reinterpret_cast<char*>(aligned) + header, kSlabBytes - header);  // blocks not handed out yet
    if (all_) all_->all_prev = slab;
    all_ = slab;
    ++slabs_;
    return slab;
}

void BlockPool::unmap(Slab* slab) noexcept {
    if (slab->open) unlink_open(slab);
    (slab->all_prev ? slab->all_prev->all_next : all_) = slab->all_next;
    if (slab->all_next) slab->all_next->all_prev = slab->all_prev;
    --slabs_;
    unmap_slab(slab);
}

void BlockPool::link_open(Slab* slab) noexcept {
    slab->open = true;
    slab->open_prev = nullptr;
    slab->open_next = open_;
    if (open_) open_->open_prev = slab;
    open_ = slab;
}

void BlockPool::unlink_open(Slab* slab) noexcept {
    slab->open = false;
    (slab->open_prev ? slab->open_prev->open_next : open_) = slab->open_next;
    if (slab->open_next) slab->open_next->open_prev = slab->open_prev;
    slab->open_prev = slab->open_next = nullptr;
}

}  // namespace cspd
