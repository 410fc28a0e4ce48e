// The quarantine list in the shared counters: handler versions (name, size, hash) fenced
// off after crashing too often. The master is its only writer; every event loop reads it.
#pragma once

#include "stats/shared_stats.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace cspd {

/// What a quarantine entry adds to the version it names.
struct QuarantineDetail {
    std::uint32_t phase = static_cast<std::uint32_t>(HandlerPhase::call);  ///< a HandlerPhase
    std::uint32_t crashes = 0;                                            ///< within the window
    std::uint64_t rolled_back_to_size = 0, rolled_back_to_hash = 0;       ///< 0: no rollback
};

/// Adds a version (the master only); when the list is full the oldest entry makes room.
void add_to_quarantine(SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash,
                       const QuarantineDetail& detail = {}) noexcept;

/// The entry of the quarantined version of `name` that rolled back to (size, hash), if any.
std::optional<QuarantineEntry> rolled_back_to(const SharedStats& stats, std::string_view name, std::uint64_t size,
                                              std::uint64_t hash) noexcept;

/// True if (name, size, hash) is in the list. One relaxed load while the list is empty.
bool is_quarantined(const SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash) noexcept;

/// The phase (a HandlerPhase) a listed version was fenced for; 0 if it is not listed.
std::uint32_t quarantine_phase(const SharedStats& stats, std::string_view name, std::uint64_t size,
                               std::uint64_t hash) noexcept;

}  // namespace cspd
