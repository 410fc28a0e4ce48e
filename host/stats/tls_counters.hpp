// What each loop counts of its TLS handshakes (in its LoopSlot): completed ones by protocol
// version, resumed ones, and failures by reason.
#pragma once

#include <cstddef>

namespace cspd {

enum class TlsVersion : unsigned char { tls12, tls13, count };
inline constexpr const char* kTlsVersionNames[] = {"TLSv1.2", "TLSv1.3"};

enum class TlsFailure : unsigned char {
    protocol_version,  ///< the client offered only versions this server refuses (1.1, 1.0, SSLv3)
    no_shared_cipher,  ///< no cipher, group or signature algorithm in common
    plain_http,        ///< plain HTTP sent to the HTTPS port (answered 400)
    bad_record,        ///< not TLS: garbage, or a record that fails to decrypt
    timeout,           ///< the handshake stalled past --header-timeout
    key_process,       ///< the key process could not sign
    peer_closed,       ///< the client closed or reset during the handshake
    other,
    count
};
inline constexpr const char* kTlsFailureNames[] = {"protocol_version", "no_shared_cipher", "plain_http", "bad_record",
                                                   "timeout",          "key_process",      "peer_closed", "other"};
static_assert(sizeof kTlsFailureNames / sizeof *kTlsFailureNames == std::size_t(TlsFailure::count));

}  // namespace cspd
