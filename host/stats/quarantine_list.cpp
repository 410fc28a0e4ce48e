#include "stats/quarantine_list.hpp"

#include "common/clocks.hpp"

#include <algorithm>
#include <cstring>

namespace cspd {

void add_to_quarantine(SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash) noexcept {
    std::uint32_t count = 0;
    stats.quarantine.write([&](QuarantineList& list) {
        if (list.count == kMaxQuarantined) {
            std::memmove(&list.entries[0], &list.entries[1], sizeof(QuarantineEntry) * (kMaxQuarantined - 1));
            --list.count;
        }
        QuarantineEntry& entry = list.entries[list.count++];
        copy_text(entry.name, sizeof entry.name, name);
        entry.size = size;
        entry.content_hash = hash;
        entry.since_unix_ms = unix_now_ms();
        count = list.count;
    });
    stats.quarantined.store(count, std::memory_order_release);
}

bool is_quarantined(const SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash) noexcept {
    if (stats.quarantined.load(std::memory_order_relaxed) == 0 || name.size() >= kStatsNameBytes) return false;
    return stats.quarantine.visit([&](const QuarantineList& list) {
        const std::uint32_t count = std::min(list.count, kMaxQuarantined);
        for (std::uint32_t i = 0; i < count; ++i) {
            const QuarantineEntry& entry = list.entries[i];
            if (entry.content_hash == hash && entry.size == size &&
                std::strncmp(entry.name, name.data(), name.size()) == 0 && entry.name[name.size()] == '\0')
                return true;
        }
        return false;
    });
}

}  // namespace cspd
