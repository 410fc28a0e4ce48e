// What each loop counts of HTTP/2 (in its LoopSlot): connections, streams, the resets it sent
// by error code and the ones it received, and the GOAWAYs it sent by reason.
#pragma once

#include <cstddef>

namespace cspd {

/// RFC 9113 §7's error codes, 0x0 to 0xd, by their value.
inline constexpr std::size_t kH2ErrorCodes = 14;
inline constexpr const char* kH2ErrorNames[kH2ErrorCodes] = {
    "NO_ERROR",          "PROTOCOL_ERROR", "INTERNAL_ERROR",    "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",     "FRAME_SIZE_ERROR", "REFUSED_STREAM",  "CANCEL",             "COMPRESSION_ERROR",
    "CONNECT_ERROR",     "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"};

/// Why the server sent a GOAWAY.
enum class H2Goaway : unsigned char {
    idle,          ///< no stream for --keepalive-timeout
    drain,         ///< the server stops (or the worker is replaced)
    protocol,      ///< the client broke the protocol (the GOAWAY's code says how)
    flood,         ///< too many SETTINGS, PING, PRIORITY or empty DATA frames
    rapid_reset,   ///< too many streams opened and reset (CVE-2023-44487)
    header_flood,  ///< a header block past the limit (CONTINUATION floods, CVE-2024-27316)
    stalled,       ///< a client that took no bytes within --send-timeout, or sent a request too slowly
    client_limit,  ///< its client held --client-connections already
    count
};
inline constexpr const char* kH2GoawayNames[] = {"idle",        "drain",        "protocol", "flood",
                                                 "rapid_reset", "header_flood", "stalled", "client_limit"};
static_assert(sizeof kH2GoawayNames / sizeof *kH2GoawayNames == std::size_t(H2Goaway::count));

}  // namespace cspd
