// The key-value store every worker of one server shares (SDK csp_kv_*): a fixed table in a
// memfd the master creates and every worker maps, so entries outlive worker restarts and handler
// reloads. Open addressing with linear probing and backward-shift deletion (no tombstones), at
// most half full; one process-shared robust mutex guards it, so a process killed while holding it
// leaves a store the next user repairs, not one that hangs.
//
// Every entry is charged to the handler that last wrote it, and no handler may hold more than its
// quota (a share of the entries, --kv-quota): one handler filling the store cannot make another's
// writes fail. Keys stay server-wide: handlers that share keys on purpose still can.
//
// Handler memory is only touched outside the lock: keys and values are staged in a buffer of the
// calling thread first, so a handler passing a bad pointer faults before the lock is taken.
#pragma once

#include "common/unique_fd.hpp"
#include "store/owner_accounts.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

struct StoreLimits {
    std::size_t entries = 4096;    ///< live entries at most (--kv-entries); 0: no store
    std::size_t value_max = 1024;  ///< bytes per value at most (--kv-value-max)
    unsigned quota_percent = 50;   ///< entries one handler may hold, in percent of `entries` (--kv-quota)

    /// The entries one writer may hold (at least one).
    std::size_t quota() const { return std::max<std::size_t>(1, entries * quota_percent / 100); }
};

class SharedStore {
public:
    static constexpr std::size_t kKeyMax = 128;

    enum class Result { ok, absent, full, too_big, not_integer, over_quota };

    /// A new, empty store (the master, or a server without one). Throws on failure.
    static SharedStore create(const StoreLimits& limits);
    /// The master's store, inherited as `fd`: its limits must be `limits`. Throws otherwise.
    static SharedStore attach(int fd, const StoreLimits& limits);

    SharedStore(SharedStore&&) noexcept;
    SharedStore& operator=(SharedStore&&) = delete;
    ~SharedStore();

    int fd() const { return fd_.get(); }
    const StoreLimits& limits() const { return limits_; }

    /// Copies up to `out_size` bytes of `key`'s value to `out`; `value_size` is its whole size.
    Result get(std::string_view key, void* out, std::size_t out_size, std::size_t& value_size);
    /// `ttl_seconds` 0: the entry never expires. `owner`: the writer charged for it (a handler's name).
    Result put(std::string_view key, std::string_view value, unsigned ttl_seconds, std::string_view owner = {});
    Result remove(std::string_view key);
    /// Adds `delta` to the decimal integer under `key` (absent: 0) and stores the sum in `result`;
    /// the entry is charged to `owner`.
    Result add(std::string_view key, std::int64_t delta, std::int64_t& result, std::string_view owner = {});

    /// What each writer holds now (expired entries count until reclaimed), for /metrics.
    std::vector<OwnerAccounts::Use> owners() const;

    /// Live entries (expired ones included until they are reclaimed), for /-/status and /metrics.
    std::size_t size() const;

    /// What time-to-live is measured by: milliseconds of a clock every process reads alike
    /// (CLOCK_MONOTONIC_COARSE). Tests set their own, so expiry needs no waiting.
    using Clock = std::int64_t (*)() noexcept;
    static std::int64_t monotonic_ms() noexcept;
    void set_clock(Clock clock) { clock_ = clock; }

private:
    struct Header;
    struct Slot;
    class Lock;

    SharedStore(UniqueFd fd, void* memory, std::size_t bytes, const StoreLimits& limits);

    Slot& slot(std::size_t index) const;
    /// The slot holding `key` (live or expired), or the empty one where it would go.
    std::size_t find(std::string_view key, std::uint64_t hash, bool& found) const;
    void erase(std::size_t index);
    /// Before a write to `index` (where find() left it) charged to `account`: ok, or full or
    /// over_quota even after expired entries were reclaimed (then index and found are redone).
    Result make_room(std::size_t& index, bool& found, std::uint64_t hash, std::uint32_t account, std::int64_t now);
    bool expired(const Slot& s, std::int64_t now_ms) const;
    /// Erases every expired entry; how many went.
    std::size_t reclaim_expired(std::int64_t now_ms);
    /// After a process died holding the lock: drops entries it may have left half written.
    void repair();
    void clear_all();
    Result store(std::size_t index, bool found, std::string_view key, std::uint64_t hash, std::string_view value,
                 std::int64_t expires_ms, std::uint32_t owner);

    UniqueFd fd_;
    void* memory_ = nullptr;
    std::size_t bytes_ = 0;
    StoreLimits limits_;
    Header* header_ = nullptr;
    Clock clock_ = &monotonic_ms;
};

}  // namespace cspd
