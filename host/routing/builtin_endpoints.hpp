// The host's own answers: GET /-/healthy and /-/ready for load balancers, GET /-/status
// and /metrics for operators, and the 503s for a quarantined handler version and for a
// blocking handler whose pool is full.
#pragma once

#include "compression/compression_policy.hpp"
#include "routing/exchange.hpp"

#include <optional>

namespace cspd {

class TlsStatusBoard;
class ClientLimits;
struct ProxyTrust;

struct SharedStats;

struct BuiltinOptions {
    bool probes = true;             ///< /-/healthy and /-/ready
    bool status_endpoints = true;   ///< /-/status and /metrics (needs shared counters)
    bool status_port_only = false;  ///< …only on connections accepted on --status-listen
    unsigned retry_after_s = 60;    ///< Retry-After of a quarantined handler's 503
    bool request_id_header = false; ///< every response says X-Request-Id (read by the Router)
    std::size_t reply_cache_bytes = 0;  ///< this loop's share of --cache-size (read by the Router)
    int static_max_age_s = -1;          ///< --static-max-age (read by the Router)
    unsigned slow_call_warn_ms = 50;    ///< --slow-call-warn (read by the Router's HandlerCall; 0: never)
    /// --https-redirect: the HTTPS port plain requests are sent to with a 308 (0: none; read by the Router)
    unsigned short https_redirect_port = 0;
    CompressionPolicy compression;  ///< --compress-* (read by the Router)
    ClientLimits* client_limits = nullptr;             ///< --client-rate (read by the Router); null: none
    const ProxyTrust* trusted_proxies = nullptr;    ///< --trust-proxy (read by the Router); null: none
};

class BuiltinEndpoints {
public:
    /// /-/ready says 503 once `*draining` is true.
    BuiltinEndpoints(BuiltinOptions options, const bool* draining) : options_(options), draining_(draining) {}

    /// /-/status and /metrics report `shared`.
    void attach_stats(const SharedStats& shared) { shared_ = &shared; }
    /// …and the certificates on `board` (with --tls-port).
    void attach_tls_status(const TlsStatusBoard& board) { tls_ = &board; }

    /// Answers the exchange if its path is one of the host's; nothing otherwise.
    std::optional<HttpStatus> try_serve(Exchange& exchange) const;

    /// The answer for a handler version in quarantine.
    HttpStatus quarantined(Exchange& exchange) const;
    /// The answer when a blocking handler's threads are all busy and its queue is full.
    HttpStatus busy(Exchange& exchange) const;
    /// 429 with Retry-After: `retry_after_s` (--client-rate).
    HttpStatus too_many(Exchange& exchange, unsigned retry_after_s) const;
    /// 503 to a connection its client had no room for (--client-connections); 429 to a WebSocket.
    HttpStatus client_full(Exchange& exchange, HttpStatus status = HttpStatus::service_unavailable) const;
    /// The answer past --max-connections, to a connection let in for probes that asked for more.
    HttpStatus full(Exchange& exchange) const;

private:
    HttpStatus probe(Exchange& exchange, bool ready_probe) const;
    HttpStatus report(Exchange& exchange, bool metrics) const;

    BuiltinOptions options_;
    const bool* draining_;
    const SharedStats* shared_ = nullptr;
    const TlsStatusBoard* tls_ = nullptr;
};

}  // namespace cspd
