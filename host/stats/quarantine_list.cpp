#include "stats/quarantine_list.hpp"

#include "common/clocks.hpp"

#include <algorithm>
#include <cstring>

namespace cspd {

void add_to_quarantine(SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash,
                       const QuarantineDetail& detail) noexcept {
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
        entry.phase = detail.phase;
        entry.crashes = detail.crashes;
        entry.rolled_back_to_size = detail.rolled_back_to_size;
        entry.rolled_back_to_hash = detail.rolled_back_to_hash;
        count = list.count;
    });
    stats.quarantined.store(count, std::memory_order_release);
}

std::uint32_t quarantine_phase(const SharedStats& stats, std::string_view name, std::uint64_t size,
                               std::uint64_t hash) noexcept {
    if (stats.quarantined.load(std::memory_order_relaxed) == 0 || name.size() >= kStatsNameBytes) return 0;
    return stats.quarantine.visit([&](const QuarantineList& list) -> std::uint32_t {
        const std::uint32_t count = std::min(list.count, kMaxQuarantined);
        for (std::uint32_t i = 0; i < count; ++i) {
            const QuarantineEntry& entry = list.entries[i];
            if (entry.content_hash == hash && entry.size == size &&
                std::strncmp(entry.name, name.data(), name.size()) == 0 && entry.name[name.size()] == '\0')
                return entry.phase ? entry.phase : static_cast<std::uint32_t>(HandlerPhase::call);
        }
        return 0;
    });
}

std::optional<QuarantineEntry> rolled_back_to(const SharedStats& stats, std::string_view name, std::uint64_t size,
                                              std::uint64_t hash) noexcept {
    if (stats.quarantined.load(std::memory_order_relaxed) == 0 || name.size() >= kStatsNameBytes) return std::nullopt;
    return stats.quarantine.visit([&](const QuarantineList& list) -> std::optional<QuarantineEntry> {
        const std::uint32_t count = std::min(list.count, kMaxQuarantined);
        for (std::uint32_t i = count; i-- > 0;) {  // the newest first
            const QuarantineEntry& entry = list.entries[i];
            if (entry.rolled_back_to_hash == hash && entry.rolled_back_to_size == size &&
                std::strncmp(entry.name, name.data(), name.size()) == 0 && entry.name[name.size()] == '\0')
                return entry;
        }
        return std::nullopt;
    });
}

bool is_quarantined(const SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash) noexcept {
    return quarantine_phase(stats, name, size, hash) != 0;
}

}  // namespace cspd
