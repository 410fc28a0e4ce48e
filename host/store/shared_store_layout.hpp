// What the shared store's memfd holds: a header (limits, the robust mutex, the owners' accounts)
// then a table of slots, each a key and room for a value. Shared by every process of a server:
// a change of it is a new kLayout, and a store of another layout is refused at attach.
// Private to store/ (shared_store.cpp operates on it, shared_store_segment.cpp makes and maps it).
#pragma once

#include "store/owner_accounts.hpp"
#include "store/shared_store.hpp"

#include <pthread.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cspd {

inline constexpr std::uint32_t kStoreMagic = 0x6373706b;  // "cspk"
inline constexpr std::uint32_t kStoreLayout = 4;

struct SharedStore::Header {
    std::uint32_t magic;
    std::uint32_t layout;
    std::uint64_t entries, value_max, table_size, slot_bytes;
    std::uint64_t used;
    std::int64_t last_sweep_ms;  // a full store sweeps for expired entries at most once a second
    pthread_mutex_t mutex;
    OwnerAccounts owners;        // who holds how many entries (--kv-quota)
};

struct SharedStore::Slot {
    // 0 free, 1 whole, 2 being rewritten in place. Written last (release) when a slot is filled, so
    // a process that dies mid-copy leaves 0 or 2, which repair() drops, never a key with another's value.
    std::uint32_t used;
    std::uint32_t key_size;
    std::uint64_t value_size;
    std::uint64_t hash;
    std::int64_t expires_ms;  // CLOCK_MONOTONIC, the same in every process; 0: never
    std::uint32_t owner;      // the OwnerAccounts index of the writer charged for it
    std::uint32_t reserved;
    char key[kKeyMax];
    char* value() { return reinterpret_cast<char*>(this + 1); }
    std::string_view key_view() const { return {key, key_size}; }
};

/// Bytes of one slot: its fixed fields and key, then room for the largest value, 8-aligned.
inline std::size_t slot_bytes_for(const StoreLimits& limits) {
    const std::size_t head = sizeof(std::uint32_t) * 4 + sizeof(std::uint64_t) * 3 + SharedStore::kKeyMax;
    return (head + limits.value_max + 7) & ~std::size_t(7);
}

}  // namespace cspd
