// The private key a worker's TLS contexts use: only the certificate's public key, with an
// OpenSSL key method whose private operation asks the key process (KeyClient) to sign. The
// worker never holds the secret; a handshake whose signature cannot be had fails.
// ECDSA and RSA (PKCS#1 v1.5 and PSS) keys.
#pragma once

#include "tls/openssl_types.hpp"

#include <cstdint>

namespace cspd {

/// A key for `leaf`'s public key that signs through the key process as key `key_id`; null (with
/// OpenSSL's queue cleared) for a key type it cannot stand for.
PkeyPtr make_proxy_key(X509* leaf, std::uint64_t key_id);

}  // namespace cspd
