// The per-client limits of the command line (--client-rate, --client-burst, --client-connections)
// and the handler's own (csp_limit), over the ClientTable every process of the server shares.
// One per process, used by any loop or pool thread (the table locks).
#pragma once

#include "common/ip_address.hpp"
#include "limits/client_table.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace cspd {

struct ClientLimitsConfig {
    double rate = 0;           ///< --client-rate: requests a second per client address (0: no limit)
    unsigned burst = 0;        ///< --client-burst: requests at once (0: the rate, rounded up)
    unsigned connections = 0;  ///< --client-connections: open work per client address (0: no limit)
    std::size_t table = 65536; ///< --client-table: addresses and handler keys remembered at once

    unsigned effective_burst() const;
};

/// "100" or "100/s" (a second), "600/m" (a minute): requests a second; nullopt for anything else,
/// or for a rate not above zero.
std::optional<double> parse_rate(std::string_view text);

/// Retry-After for a wait: whole seconds, rounded up, at least 1.
unsigned retry_after_seconds(std::int64_t wait_ns);

class ClientLimits {
public:
    /// `table` outlives this; `holder` is this process's (ClientTable::hold): its first loop slot.
    ClientLimits(const ClientLimitsConfig& config, ClientTable& table, unsigned holder = 0);

    bool limits_rate() const { return interval_ns_ > 0; }
    bool caps_work() const { return config_.connections > 0; }

    /// One request from `client` at `now_ns` (CLOCK_MONOTONIC): 0 if it may go on, or the
    /// seconds it should wait (Retry-After). Always 0 without --client-rate.
    unsigned charge_request(const IpAddress& client, std::int64_t now_ns);
    /// As charge_request for `key` (an address's limit_key()), taking up to lease_size() requests
    /// at once while its bucket stays well inside the burst: `taken` says how many (>= 1 when let in).
    unsigned charge_ahead(const IpAddress& key, std::int64_t now_ns, unsigned& taken);
    /// Gives back `requests` charge_ahead took for `key` that will not be used.
    void refund(const IpAddress& key, unsigned requests);
    /// Requests a loop takes ahead at most: an eighth of the burst, at most 64 (1: none ahead).
    unsigned lease_size() const { return lease_; }

    /// csp_limit: one request charged to `key` in `handler`'s own namespace (a handler cannot
    /// drain another's buckets) at `per_second` after a burst of `burst`: 0, or seconds to wait.
    unsigned charge_key(std::string_view handler, std::string_view key, double per_second, unsigned burst,
                        std::int64_t now_ns);

    /// One more unit of open work (a connection, an HTTP/2 stream, a WebSocket) for `client`:
    /// true if it may have it; then `held` says whether release() is owed (false when the table
    /// could not track it). Always true (held false) without --client-connections.
    bool hold(const IpAddress& client, bool& held);
    void release(const IpAddress& client);

    ClientTable& table() { return table_; }
    const ClientLimitsConfig& config() const { return config_; }

private:
    ClientLimitsConfig config_;
    ClientTable& table_;
    std::int64_t interval_ns_ = 0;  // between requests at --client-rate (0: none)
    unsigned burst_ = 1;            // --client-burst, or its default
    unsigned holder_;
    unsigned lease_ = 1;
};

/// One unit of --client-connections held for a client (ClientLimits::hold said `held`), given
/// back when this goes or is reset: the open work it stands for may end on any thread.
class ClientUnit {
public:
    ClientUnit() = default;
    ClientUnit(ClientLimits& limits, const IpAddress& client) : limits_(&limits), client_(client) {}
    ClientUnit(ClientUnit&& from) noexcept : limits_(std::exchange(from.limits_, nullptr)), client_(from.client_) {}
    ClientUnit& operator=(ClientUnit&& from) noexcept {
        if (this != &from) {
            reset();
            limits_ = std::exchange(from.limits_, nullptr);
            client_ = from.client_;
        }
        return *this;
    }
    ~ClientUnit() { reset(); }

    void reset() noexcept {
        if (limits_) std::exchange(limits_, nullptr)->release(client_);
    }
    explicit operator bool() const { return limits_ != nullptr; }

private:
    ClientLimits* limits_ = nullptr;
    IpAddress client_{};
};

}  // namespace cspd
