// The memory every process of one server maps: the counters (stats/shared_stats) and the
// key-value store (store/shared_store). The process at the top makes them (the master, or a
// process serving alone); a worker maps its master's, inherited at WorkerRole's descriptors.
#pragma once

#include "process/config.hpp"
#include "process/worker_role.hpp"
#include "limits/client_table.hpp"
#include "stats/shared_stats.hpp"
#include "store/shared_store.hpp"

#include <optional>

namespace cspd {

/// Made with room for --max-handlers names, or (`role`) the master's. Throws on failure.
SharedStatsMapping shared_counters_for(const Config& config, const std::optional<WorkerRole>& role = std::nullopt);

/// Made with --kv-* limits, or (`role`) the master's; none with --kv-entries 0. Throws on failure.
std::optional<SharedStore> shared_store_for(const Config& config, const std::optional<WorkerRole>& role = std::nullopt);

/// Made with room for --client-table keys, or (`role`) the master's: always, for csp_limit. Throws
/// on failure.
ClientTable client_table_for(const Config& config, const std::optional<WorkerRole>& role = std::nullopt);

}  // namespace cspd
