// The PROXY protocol header (HAProxy's spec, versions 1 and 2) a TCP balancer writes before the
// client's first byte, naming the client it accepted (--proxy-protocol): nginx's proxy_protocol,
// HAProxy's send-proxy / send-proxy-v2, AWS NLB. No I/O: the caller peeks at the socket's first
// bytes, and takes exactly `length` of them once the header is whole. Fuzzed alone
// (tests/fuzz/proxy_header_fuzzer.cpp).
#pragma once

#include "common/ip_address.hpp"

#include <cstddef>
#include <optional>
#include <string_view>

namespace cspd {

/// Longest header taken: v1's 107 bytes, or v2's 16-byte head with up to this many bytes of
/// addresses and TLVs (HAProxy's own TLVs, SSL details included, fit well inside).
inline constexpr std::size_t kProxyV2MaxBody = 1024;
inline constexpr std::size_t kProxyHeaderMax = 16 + kProxyV2MaxBody;

struct ProxyHeader {
    enum class State { incomplete, whole, bad };
    State state = State::incomplete;
    std::size_t length = 0;               ///< whole: bytes the header takes, to consume
    std::optional<IpAddress> source;      ///< whole: the client, or none (LOCAL, UNKNOWN, AF_UNSPEC, AF_UNIX)
    unsigned short source_port = 0;
    const char* why = "";                 ///< bad: what is wrong, for the log
};

/// Reads the header at the start of `bytes` (what has arrived so far): incomplete while more could
/// make it whole, bad as soon as no continuation could.
ProxyHeader parse_proxy_header(std::string_view bytes);

}  // namespace cspd
