// What /metrics and /-/status say of the protocols: requests by protocol, HTTP/2's connections,
// streams, resets and GOAWAYs, and WebSocket's conversations, messages, bytes and closes, summed
// over every loop's slot.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace cspd {

struct SharedStats;

/// Appends the cspd_requests_by_protocol_total, cspd_http2_* and cspd_websocket* families.
void protocol_metrics(std::string& out, const SharedStats& stats);
/// Adds "http1", "http2" and "websocket" objects to a /-/status document.
void add_protocol_status(nlohmann::ordered_json& doc, const SharedStats& stats);

}  // namespace cspd
