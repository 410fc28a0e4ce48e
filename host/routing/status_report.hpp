// The operator's view of the shared counters: GET /metrics (Prometheus text format 0.0.4)
// and GET /-/status (JSON). Both sum every event loop of every worker, so any worker
// answers for the whole server.
#pragma once

#include <string>

namespace cspd {

struct SharedStats;

std::string render_metrics(const SharedStats& stats);
std::string render_status(const SharedStats& stats);

}  // namespace cspd
