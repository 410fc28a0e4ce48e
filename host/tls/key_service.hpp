// The key process's work, apart from its sockets: it reads the --certs folder (and makes the
// --tls-self-signed certificate in its own memory), tells workers which certificates serve,
// and signs for them with keys no worker ever holds. Keys are named by an id that is never
// reused; a key that stops serving can still sign for two minutes (handshakes in flight on a
// worker that has not seen the change yet).
//
// What it signs is limited to what a TLS handshake needs: an ECDSA digest, a PKCS#1 v1.5
// DigestInfo, or a block that is a well-formed EMSA-PSS encoding -- never a bare number, so
// an RSA key cannot be used to decrypt.
#pragma once

#include "tls/certificate_folder.hpp"
#include "tls/key_protocol.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace cspd {

class KeyService {
public:
    /// `certs`: the folder, or empty; `self_signed`: serve one made now while the folder has none.
    KeyService(const std::filesystem::path& certs, bool self_signed, std::optional<KeyOutsider> outsider = {});

    /// Looks at the folder again; a change makes a new generation.
    void rescan(std::int64_t now);
    /// The answer (an encoded frame) to one request.
    std::string answer(const key_protocol::Frame& request);

    std::uint64_t generation() const { return generation_; }

private:
    void make_listing(std::int64_t now);
    std::uint64_t id_of(const std::shared_ptr<const Certificate>& certificate);
    struct Held;
    std::string sign(key_protocol::Op op, Held& held, std::string_view block, bool& refused);

    struct ContextFree {
        void operator()(EVP_PKEY_CTX* ctx) const noexcept { EVP_PKEY_CTX_free(ctx); }
    };
    struct Held {
        std::shared_ptr<const Certificate> certificate;
        std::int64_t retired_at = 0;  ///< when it stopped serving; 0 while it serves
        // Ready to sign, by op (ECDSA, PKCS#1, raw for PSS): set up once, not per handshake
        // (OpenSSL 3 looks algorithms up in every EVP_PKEY_CTX it makes).
        std::unique_ptr<EVP_PKEY_CTX, ContextFree> signing[3];
    };
    std::optional<CertificateFolder> folder_;
    std::shared_ptr<const Certificate> self_signed_;
    std::map<std::uint64_t, Held> keys_;
    std::uint64_t next_id_ = 1;
    std::uint64_t generation_ = 0;
    std::string listing_;  // JSON, for generation_
    std::size_t refusals_seen_ = 0;  // a digest of the refusals listed
};

/// True if `block` (the size of the RSA modulus of `modulus_bits`) is an EMSA-PSS encoding
/// (RFC 8017 §9.1.1) with a salt as long as the hash, for SHA-256, SHA-384 or SHA-512.
bool is_pss_encoding(std::string_view block, int modulus_bits);

}  // namespace cspd
