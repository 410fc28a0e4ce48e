#include "process/shared_segments.hpp"

namespace cspd {

SharedStatsMapping shared_counters_for(const Config& config, const std::optional<WorkerRole>& role) {
    return role ? SharedStatsMapping::attach(WorkerFds::kStats) : SharedStatsMapping::create(config.max_handlers);
}

std::optional<SharedStore> shared_store_for(const Config& config, const std::optional<WorkerRole>& role) {
    if (!config.kv_entries) return std::nullopt;
    const StoreLimits limits{config.kv_entries, config.kv_value_max, config.kv_quota_percent};
    return role ? SharedStore::attach(WorkerFds::kStore, limits) : SharedStore::create(limits);
}

ClientTable client_table_for(const Config& config, const std::optional<WorkerRole>& role) {
    const std::size_t entries = config.client_limits.table;
    return role ? ClientTable::attach(WorkerFds::kClients, entries) : ClientTable::create(entries);
}

}  // namespace cspd
