// The client a proxy speaks for (--trust-proxy): from a trusted peer, X-Forwarded-For, or without
// it Forwarded's for= (RFC 7239), read from the right. Each proxy appends the address it got the
// request from, so walking right to left past the proxies we trust, the first address we do not
// is the client: whatever a client wrote itself sits further left and is never reached, as in
// nginx's real_ip_recursive. No I/O: fuzzed alone (tests/fuzz/forwarded_for_fuzzer.cpp).
#pragma once

#include "common/ip_address.hpp"
#include "http/request.hpp"

#include <optional>
#include <string_view>

namespace cspd {

/// The client behind a trusted peer, from `request`'s headers: the right-most address not in
/// `trusted`; the left-most when every one is trusted. Where an entry is not an address ("unknown",
/// an obfuscated name, garbage), the walk stops at the address to its right, or with nullopt when
/// it is the right-most: the trusted peer's own address stands then. Nullopt without either header.
std::optional<IpAddress> forwarded_client(const HttpRequest& request, const AddressRanges& trusted);

/// One entry of either header, as an address: "192.0.2.1", "2001:db8::1", "[2001:db8::1]:4711",
/// "192.0.2.1:8080", or a Forwarded for= value, quoted or not. Nullopt for anything else.
std::optional<IpAddress> forwarded_address(std::string_view entry);

}  // namespace cspd
