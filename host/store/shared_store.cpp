#include "store/shared_store.hpp"

#include "common/clocks.hpp"
#include "store/owner_accounts.hpp"
#include "store/shared_store_layout.hpp"

#include <pthread.h>

#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace cspd {
namespace {
std::uint64_t hash_key(std::string_view key) {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    return h;
}

}  // namespace

std::int64_t SharedStore::monotonic_ms() noexcept { return coarse_monotonic_now_ns() / 1'000'000; }

/// The store's mutex, held for one operation. A holder that died leaves it "owner dead": the
/// next one repairs the table before using it.
class SharedStore::Lock {
public:
    explicit Lock(SharedStore& store) : mutex_(&store.header_->mutex) {
        if (pthread_mutex_lock(mutex_) == EOWNERDEAD) {
            try {
                store.repair();
            } catch (...) {
                store.clear_all();  // no memory to rebuild with: an empty store beats a stuck one
            }
            pthread_mutex_consistent(mutex_);
        }
    }
    ~Lock() { pthread_mutex_unlock(mutex_); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

private:
    pthread_mutex_t* mutex_;
};

SharedStore::Slot& SharedStore::slot(std::size_t index) const {
    static_assert(offsetof(Slot, key) == sizeof(std::uint32_t) * 4 + sizeof(std::uint64_t) * 3, "slot_bytes_for");
    const std::size_t header_bytes = (sizeof(Header) + 63) & ~std::size_t(63);
    return *reinterpret_cast<Slot*>(static_cast<char*>(memory_) + header_bytes + index * header_->slot_bytes);
}

std::size_t SharedStore::find(std::string_view key, std::uint64_t hash, bool& found) const {
    const std::size_t mask = header_->table_size - 1;
    // At most half full: an empty slot always ends the probe.
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot& s = slot(i);
        if (!s.used) {
            found = false;
            return i;
        }
        if (s.hash == hash && s.key_view() == key) {
            found = true;
            return i;
        }
    }
}

bool SharedStore::expired(const Slot& s, std::int64_t now) const { return s.expires_ms != 0 && s.expires_ms <= now; }

std::vector<OwnerAccounts::Use> SharedStore::owners() const {
    if (!header_) return {};
    Lock lock(const_cast<SharedStore&>(*this));
    return header_->owners.uses();
}

void SharedStore::erase(std::size_t hole) {
    header_->owners.charge(slot(hole).owner, -1);
    // Backward shift: later entries of the run move up into the hole if their home allows it.
    const std::size_t mask = header_->table_size - 1;
    for (std::size_t j = (hole + 1) & mask;; j = (j + 1) & mask) {
        Slot& s = slot(j);
        if (!s.used) break;
        const std::size_t home = s.hash & mask;
        // s may move to the hole unless its home lies cyclically in (hole, j].
        const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays) continue;
        // The hole is free while it is filled; the moved entry is whole in the hole before its old
        // slot is freed. A death in between leaves a duplicate, which repair() drops.
        Slot& target = slot(hole);
        __atomic_store_n(&target.used, 0u, __ATOMIC_RELEASE);
        std::memcpy(target.value(), s.value(), s.value_size);
        target.key_size = s.key_size;
        std::memcpy(&target.value_size, &s.value_size, offsetof(Slot, key) + s.key_size - offsetof(Slot, value_size));
        __atomic_store_n(&target.used, 1u, __ATOMIC_RELEASE);
        __atomic_store_n(&s.used, 0u, __ATOMIC_RELEASE);
        hole = j;
    }
    __atomic_store_n(&slot(hole).used, 0u, __ATOMIC_RELEASE);
    --header_->used;
}

std::size_t SharedStore::reclaim_expired(std::int64_t now) {
    // A sweep reads the whole table under the lock: a store kept full must not pay it every put.
    if (header_->last_sweep_ms && now - header_->last_sweep_ms < 1000) return 0;
    header_->last_sweep_ms = now;
    std::size_t reclaimed = 0;
    for (std::size_t i = 0; i < header_->table_size;) {
        if (slot(i).used && expired(slot(i), now)) {
            erase(i);  // may shift another entry into i: look at i again
            ++reclaimed;
        } else {
            ++i;
        }
    }
    return reclaimed;
}

void SharedStore::clear_all() {
    for (std::size_t i = 0; i < header_->table_size; ++i) slot(i).used = 0;
    header_->used = 0;
    header_->owners.clear_charges();
}

void SharedStore::repair() {
    // The dead holder may have been anywhere in an erase or a store: rebuild the table from the
    // entries that are whole, keeping the first of any key seen twice.
    struct Entry {
        std::string key, value;
        std::int64_t expires_ms;
        std::uint32_t owner;
    };
    std::vector<Entry> entries;
    for (std::size_t i = 0; i < header_->table_size; ++i) {
        Slot& s = slot(i);
        if (s.used != 1) continue;  // free, or caught mid-rewrite
        if (s.key_size == 0 || s.key_size > kKeyMax || s.value_size > header_->value_max) continue;
        entries.push_back({std::string(s.key_view()), std::string(s.value(), s.value_size), s.expires_ms,
                           s.owner < OwnerAccounts::kAccounts ? s.owner : OwnerAccounts::kNobody});
    }
    clear_all();
    for (const Entry& e : entries) {
        if (header_->used >= header_->entries) break;
        const std::uint64_t hash = hash_key(e.key);
        bool found = false;
        const std::size_t index = find(e.key, hash, found);
        if (!found) store(index, false, e.key, hash, e.value, e.expires_ms, e.owner);
    }
}

SharedStore::Result SharedStore::store(std::size_t index, bool found, std::string_view key, std::uint64_t hash,
                                       std::string_view value, std::int64_t expires_ms, std::uint32_t owner) {
    Slot& s = slot(index);
    // Marked while written: a death mid-copy must not leave a whole-looking entry with torn bytes.
    __atomic_store_n(&s.used, found ? 2u : 0u, __ATOMIC_RELEASE);
    if (!found) {
        s.hash = hash;
        s.key_size = static_cast<std::uint32_t>(key.size());
        std::memcpy(s.key, key.data(), key.size());
        ++header_->used;
    } else {
        header_->owners.charge(s.owner, -1);
    }
    header_->owners.charge(owner, 1);
    s.owner = owner;
    s.value_size = value.size();
    std::memcpy(s.value(), value.data(), value.size());
    s.expires_ms = expires_ms;
    __atomic_store_n(&s.used, 1u, __ATOMIC_RELEASE);
    return Result::ok;
}

namespace {
/// The calling thread's copy of a key or value, made before the lock is taken.
struct Staged {
    char key[SharedStore::kKeyMax];
    std::size_t key_size = 0;
    std::string value;

    bool stage_key(std::string_view k) {
        if (k.empty() || k.size() > SharedStore::kKeyMax) return false;
        std::memcpy(key, k.data(), k.size());
        key_size = k.size();
        return true;
    }
    std::string_view key_view() const { return {key, key_size}; }
};
thread_local Staged staged;
}  // namespace

SharedStore::Result SharedStore::get(std::string_view key, void* out, std::size_t out_size, std::size_t& value_size) {
    if (!staged.stage_key(key)) return Result::too_big;
    const std::uint64_t hash = hash_key(staged.key_view());
    {
        Lock lock(*this);
        bool found = false;
        const std::size_t index = find(staged.key_view(), hash, found);
        if (!found) return Result::absent;
        Slot& s = slot(index);
        if (expired(s, clock_())) {
            erase(index);
            return Result::absent;
        }
        staged.value.assign(s.value(), s.value_size);
    }
    value_size = staged.value.size();
    if (out_size) std::memcpy(out, staged.value.data(), std::min(out_size, staged.value.size()));
    return Result::ok;
}

SharedStore::Result SharedStore::put(std::string_view key, std::string_view value, unsigned ttl_seconds,
                                     std::string_view owner) {
    if (!staged.stage_key(key) || value.size() > header_->value_max) return Result::too_big;
    staged.value.assign(value);
    const std::uint64_t hash = hash_key(staged.key_view());
    const std::int64_t now = clock_();
    const std::int64_t expires = ttl_seconds ? now + std::int64_t(ttl_seconds) * 1000 : 0;
    Lock lock(*this);
    const std::uint32_t account = header_->owners.index_of(owner);
    bool found = false;
    std::size_t index = find(staged.key_view(), hash, found);
    if (const Result room = make_room(index, found, hash, account, now); room != Result::ok) return room;
    return store(index, found, staged.key_view(), hash, staged.value, expires, account);
}

SharedStore::Result SharedStore::make_room(std::size_t& index, bool& found, std::uint64_t hash, std::uint32_t account,
                                           std::int64_t now) {
    // A new entry needs a free one, and an entry newly charged to `account` needs room in its quota;
    // expired entries are reclaimed for either, at most once a second.
    const auto new_charge = [&] { return !found || slot(index).owner != account; };
    const auto blocked = [&] {
        if (!found && header_->used >= header_->entries) return Result::full;
        if (new_charge() && !header_->owners.has_room(account)) return Result::over_quota;
        return Result::ok;
    };
    Result result = blocked();
    if (result != Result::ok && reclaim_expired(now) > 0) {
        index = find(staged.key_view(), hash, found);
        result = blocked();
    }
    if (result == Result::over_quota) header_->owners.count_refusal(account);
    return result;
}

SharedStore::Result SharedStore::remove(std::string_view key) {
    if (!staged.stage_key(key)) return Result::too_big;
    const std::uint64_t hash = hash_key(staged.key_view());
    Lock lock(*this);
    bool found = false;
    const std::size_t index = find(staged.key_view(), hash, found);
    if (!found) return Result::absent;
    const bool was_live = !expired(slot(index), clock_());
    erase(index);
    return was_live ? Result::ok : Result::absent;
}

SharedStore::Result SharedStore::add(std::string_view key, std::int64_t delta, std::int64_t& result,
                                     std::string_view owner) {
    if (!staged.stage_key(key)) return Result::too_big;
    const std::uint64_t hash = hash_key(staged.key_view());
    const std::int64_t now = clock_();
    Lock lock(*this);
    const std::uint32_t account = header_->owners.index_of(owner);
    bool found = false;
    std::size_t index = find(staged.key_view(), hash, found);
    std::int64_t value = 0, expires = 0;
    if (found && expired(slot(index), now)) {
        erase(index);
        index = find(staged.key_view(), hash, found);
    }
    if (found) {
        Slot& s = slot(index);
        const char* text = s.value();
        const auto [end, error] = std::from_chars(text, text + s.value_size, value);
        if (error != std::errc() || end != text + s.value_size || s.value_size == 0) return Result::not_integer;
        expires = s.expires_ms;
    }
    if (const Result room = make_room(index, found, hash, account, now); room != Result::ok) return room;
    if (!found) value = 0, expires = 0;  // the entry read above expired in the sweep
    if (__builtin_add_overflow(value, delta, &result)) return Result::not_integer;
    char digits[24];
    const auto [end, error] = std::to_chars(digits, digits + sizeof digits, result);
    (void)error;
    const std::string_view text(digits, static_cast<std::size_t>(end - digits));
    if (text.size() > header_->value_max) return Result::too_big;
    return store(index, found, staged.key_view(), hash, text, expires, account);
}

std::size_t SharedStore::size() const { return header_ ? __atomic_load_n(&header_->used, __ATOMIC_RELAXED) : 0; }

}  // namespace cspd
