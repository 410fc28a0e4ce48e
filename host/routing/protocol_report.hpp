// What /metrics and /-/status say of the protocols: requests by protocol, and HTTP/2's
// connections, streams, resets and GOAWAYs, summed over every loop's slot.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace cspd {

struct SharedStats;

/// Appends the cspd_requests_by_protocol_total and cspd_http2_* families.
void protocol_metrics(std::string& out, const SharedStats& stats);
/// Adds "http1" and "http2" objects to a /-/status document.
void add_protocol_status(nlohmann::ordered_json& doc, const SharedStats& stats);

}  // namespace cspd
