// One event loop's share of --client-rate, taken ahead: when a client is far inside its rate
// (half its burst would stay in the bucket), the loop takes a few of its requests from the shared
// bucket at once (an eighth of the burst, at most 64) and lets the next ones in without touching
// the table (its lock and its clock). Every request let in is paid for in the shared bucket when
// taken, so a client never gets more than its rate and burst; near its limit nothing is taken
// ahead, and each request is charged alone, exactly. What a loop holds for a client whose slot
// another client takes goes back to the bucket; what it holds for a client whose next requests
// go to other loops waits for its return (a few requests out of a burst that was far from spent).
// Loop thread only.
#pragma once

#include "common/ip_address.hpp"
#include "limits/client_limits.hpp"

#include <array>
#include <cstdint>

namespace cspd {

class ClientLeases {
public:
    /// `limits` outlives this.
    explicit ClientLeases(ClientLimits& limits) : limits_(limits) {}

    /// A request from `client`: 0 if it may go on, or the seconds it should wait.
    unsigned charge_request(const IpAddress& client);

private:
    struct Lease {
        IpAddress client;  // its limit_key()
        unsigned left = 0;
    };
    ClientLimits& limits_;
    std::array<Lease, 64> leases_{};  // direct-mapped by the client's key
};

}  // namespace cspd
