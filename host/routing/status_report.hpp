// The operator's view of the shared counters: GET /metrics (Prometheus text format 0.0.4)
// and GET /-/status (JSON). Both sum every event loop of every worker, so any worker
// answers for the whole server.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

struct SharedStats;
class SharedStore;
class TlsStatusBoard;
class ClientLimits;

/// `store`: the server's shared store, if it has one (its use by handler is reported too);
/// `tls`: its HTTPS certificates, with --tls-port (handshakes are reported then too);
/// `clients`: the per-client limits' refusals and table; `cluster_redis`: --cluster's Redis (its
/// link's figures are in `stats`), empty without it.
std::string render_metrics(const SharedStats& stats, const SharedStore* store = nullptr,
                           const TlsStatusBoard* tls = nullptr, ClientLimits* clients = nullptr,
                           std::string_view cluster_redis = {});
/// Who reads it: on the public port (`for_public`) texts name files, never where they are
/// (refusal reasons carry paths into private folders), and the addresses limited most are left
/// out; the status address gets them whole.
std::string render_status(const SharedStats& stats, bool for_public = false, const SharedStore* store = nullptr,
                          const TlsStatusBoard* tls = nullptr, ClientLimits* clients = nullptr,
                          std::string_view cluster_redis = {});

}  // namespace cspd
