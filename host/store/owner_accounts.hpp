// Who holds how many entries of the shared store: one account per writer (a handler's name),
// kept inside the store's shared mapping, so every worker charges and reads the same counts.
// Plain data that lives in shared memory, used under the store's lock only. Accounts are never
// freed (handler names are few); past kAccounts - 2 names, the rest share the last one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

struct OwnerAccounts {
    static constexpr std::size_t kNameMax = 63;
    static constexpr std::uint32_t kAccounts = 256;
    /// Account 0 is no one: writes without an owner (the host's own) are never limited.
    static constexpr std::uint32_t kNobody = 0;

    /// One writer's use of the store, as reported.
    struct Use {
        std::string name;
        std::size_t entries = 0;
        std::uint64_t refused = 0;  ///< writes refused for the quota
    };

    /// Makes every account empty; `quota` entries each.
    void reset(std::uint64_t quota);
    /// The account of `owner` (made on first use); kNobody for an empty name.
    std::uint32_t index_of(std::string_view owner);
    /// Whether `account` may take one more entry.
    bool has_room(std::uint32_t account) const { return account == kNobody || held(account) < quota; }
    std::uint64_t held(std::uint32_t account) const { return account < kAccounts ? slots[account].entries : 0; }
    /// Adds `entries` (negative: gives them back) to `account`'s charge.
    void charge(std::uint32_t account, std::int64_t entries);
    void count_refusal(std::uint32_t account) {
        if (account < kAccounts) ++slots[account].refused;
    }
    /// Sets every charge to zero (the table is rebuilt).
    void clear_charges();
    std::vector<Use> uses() const;

    struct Slot {
        char name[kNameMax + 1];
        std::uint64_t entries;
        std::uint64_t refused;
    };
    std::uint64_t quota;
    Slot slots[kAccounts];  // by hash of the name, linear probing
};

}  // namespace cspd
