#include "store/owner_accounts.hpp"

#include "common/fnv1a.hpp"

#include <cstring>

namespace cspd {
namespace {
constexpr std::uint32_t kShared = OwnerAccounts::kAccounts - 1;  // everyone past the others
}  // namespace

void OwnerAccounts::reset(std::uint64_t entries_each) {
    std::memset(slots, 0, sizeof slots);
    quota = entries_each;
}

std::uint32_t OwnerAccounts::index_of(std::string_view owner) {
    if (owner.empty()) return kNobody;
    owner = owner.substr(0, kNameMax);
    const std::uint32_t named = kShared - 1;  // accounts 1 .. kShared - 1
    const std::uint32_t home = static_cast<std::uint32_t>(fnv1a64(owner) % named);
    for (std::uint32_t probe = 0; probe < named; ++probe) {
        const std::uint32_t i = 1 + (home + probe) % named;
        Slot& slot = slots[i];
        if (!slot.name[0]) {
            std::memcpy(slot.name, owner.data(), owner.size());
            slot.name[owner.size()] = '\0';
            return i;
        }
        if (owner == slot.name) return i;
    }
    if (!slots[kShared].name[0]) std::strcpy(slots[kShared].name, "(others)");
    return kShared;
}

void OwnerAccounts::charge(std::uint32_t account, std::int64_t entries) {
    if (account == kNobody || account >= kAccounts) return;
    std::uint64_t& held = slots[account].entries;
    held = entries < 0 && held < std::uint64_t(-entries) ? 0 : held + std::uint64_t(entries);
}

void OwnerAccounts::clear_charges() {
    for (Slot& slot : slots) slot.entries = 0;
}

std::vector<OwnerAccounts::Use> OwnerAccounts::uses() const {
    std::vector<Use> use;
    for (const Slot& slot : slots)
        if (slot.name[0]) use.push_back({slot.name, std::size_t(slot.entries), slot.refused});
    return use;
}

}  // namespace cspd
