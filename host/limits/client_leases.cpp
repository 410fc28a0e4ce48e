#include "limits/client_leases.hpp"

#include "common/clocks.hpp"

#include <cstring>

namespace cspd {

unsigned ClientLeases::charge_request(const IpAddress& client) {
    if (limits_.lease_size() <= 1) return limits_.charge_request(client, coarse_monotonic_now_ns());
    const IpAddress key = client.limit_key();
    std::uint64_t high, low;
    std::memcpy(&high, key.bytes.data(), 8);
    std::memcpy(&low, key.bytes.data() + 8, 8);
    Lease& lease = leases_[((high ^ low) * 0x9e3779b97f4a7c15ull) >> 58];  // 64 slots: the top 6 bits
    if (lease.left > 0 && lease.client == key) {
        --lease.left;
        return 0;
    }
    unsigned taken = 0;
    const unsigned wait = limits_.charge_ahead(key, coarse_monotonic_now_ns(), taken);
    if (wait) return wait;
    // Another client's requests kept in this slot go back to its bucket: it loses none.
    if (lease.left > 0 && lease.client != key) limits_.refund(lease.client, lease.left);
    lease = {key, taken - 1};
    return 0;
}

}  // namespace cspd
