// What the SDK reaches beyond one request, for the whole process: the store shared by all workers
// and the handler log's budget. Set once by the server before its loops start, read by any thread.
#pragma once

#include <filesystem>
#include <string>

namespace cspd {

class SharedStore;
class ClientLimits;

struct HostServices {
    SharedStore* store = nullptr;  ///< null: the server runs without one (csp_kv_* give CSP_KV_UNAVAILABLE)
    unsigned log_rate = 50;        ///< --handler-log-rate: lines a second per handler version and process
    ClientLimits* client_limits = nullptr;  ///< the per-client counts (csp_limit); null: none (csp_limit lets all in)
    std::string cluster_redis;  ///< --cluster's Redis, for /-/status and /metrics; empty: none
    std::filesystem::path data_dir;  ///< --data-dir: handlers' own folders beneath (csp_data_dir); empty: none
};

HostServices& host_services();

}  // namespace cspd
