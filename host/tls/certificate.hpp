// One server certificate as cspd serves it: the chain, the private key, and what an operator
// and the SNI choice need to know of it. Made only by load_certificate, which refuses what
// cannot serve (no key, a key of another certificate, outside its validity, no names) with
// the reason in words.
#pragma once

#include "tls/openssl_types.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace cspd {

struct Certificate {
    std::string file;                    ///< as shown to operators: "site.pem", "site.crt+site.key"
    std::vector<std::string> dns_names;  ///< subjectAltName DNS names, lower case ("*.example.com" too)
    std::vector<std::string> ip_names;   ///< subjectAltName addresses, as text
    std::int64_t not_before = 0;         ///< Unix seconds
    std::int64_t not_after = 0;
    std::string sha256;                  ///< of the leaf's DER, upper-case hex with colons
    X509Ptr leaf;
    std::vector<X509Ptr> chain;          ///< intermediates, in file order
    PkeyPtr key;
};

struct LoadedCertificate {
    std::shared_ptr<const Certificate> certificate;  ///< null when refused
    std::string refusal;                             ///< why, when refused
};

/// Reads `pem` (key and chain in one file) or, with `key` set, the chain from `pem` and the key
/// from `key`; `now` (Unix seconds) is when validity is judged. Never throws for bad input.
LoadedCertificate load_certificate(const std::filesystem::path& pem, const std::filesystem::path& key,
                                   std::int64_t now);

/// The certificates of `chain_pem` described (names, validity, fingerprint), without a key and
/// without judging them; null if it holds none. For a worker, whose key stays in the key process.
std::shared_ptr<Certificate> describe_chain(std::string file, std::string_view chain_pem);

/// The same from bytes in memory (the self-signed certificate; tests). `file` names it.
LoadedCertificate parse_certificate(std::string file, std::string_view chain_pem, std::string_view key_pem,
                                    std::int64_t now);

/// "2026-12-02 23:59:59 UTC".
std::string utc_text(std::int64_t unix_seconds);

/// True if `name` (lower case, from SNI) is one of `certificate`'s DNS names, a wildcard
/// standing for exactly one leftmost label.
bool certificate_covers(const Certificate& certificate, std::string_view name);

}  // namespace cspd
