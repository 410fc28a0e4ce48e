// The client a proxy speaks for (--trust-proxy): from a trusted peer, X-Forwarded-For, or without
// it Forwarded's for= (RFC 7239), read from the right. Each proxy appends the address it got the
// request from, so walking right to left past the proxies we trust, the first address we do not
// is the client: whatever a client wrote itself sits further left and is never reached, as in
// nginx's real_ip_recursive. No I/O: fuzzed alone (tests/fuzz/forwarded_for_fuzzer.cpp).
#pragma once

#include "common/ip_address.hpp"
#include "http/request.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace cspd {

/// Which header the proxies write: one only, never the other as a fallback (a proxy that writes
/// Forwarded passes a client's own X-Forwarded-For through untouched, and the other way round).
enum class ForwardedHeader : std::uint8_t { x_forwarded_for, forwarded };

/// --trust-proxy and --trust-proxy-header.
struct ProxyTrust {
    AddressRanges peers;
    ForwardedHeader header = ForwardedHeader::x_forwarded_for;

    bool empty() const { return peers.empty(); }
    bool trusts(const IpAddress& address) const { return peers.contains(address); }
    /// The client `peer` forwards `request` for, if `peer` is trusted and names one.
    std::optional<IpAddress> client_behind(const IpAddress& peer, const HttpRequest& request) const;
};

/// The client behind a trusted peer, from `request`'s `trust.header` lines: the right-most address
/// not trusted; the left-most when every one is. Where an entry is not an address ("unknown", an
/// obfuscated name, garbage), the walk stops at the address to its right, or with nullopt when it
/// is the right-most: the trusted peer's own address stands then. Nullopt without the header.
std::optional<IpAddress> forwarded_client(const HttpRequest& request, const ProxyTrust& trust);

/// One entry of either header, as an address: "192.0.2.1", "2001:db8::1", "[2001:db8::1]:4711",
/// "192.0.2.1:8080", or a Forwarded for= value, quoted or not. Nullopt for anything else.
std::optional<IpAddress> forwarded_address(std::string_view entry);

}  // namespace cspd
