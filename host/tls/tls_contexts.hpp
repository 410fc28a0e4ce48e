// The TLS contexts one set of certificates serves with: one SSL_CTX each, all with cspd's
// profile (TLS 1.2 and 1.3 only; Mozilla's "intermediate" choice of ciphers and groups; no
// renegotiation, compression or 0-RTT), the certificate for a handshake chosen by SNI.
// Immutable once built: a changed folder builds a new set, and connections keep the set they
// began with (they hold it) while new ones take the new one.
#pragma once

#include "tls/certificate.hpp"
#include "tls/openssl_types.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace cspd {

class TlsContexts {
public:
    /// Contexts for `certificates` (at least one); `default_index` answers clients that send no
    /// SNI or a name no certificate covers; `http2`: ALPN offers h2 before http/1.1. Throws
    /// std::runtime_error with OpenSSL's reason.
    static std::shared_ptr<const TlsContexts> build(std::vector<std::shared_ptr<const Certificate>> certificates,
                                                    std::size_t default_index, bool http2 = false);

    /// A server-side SSL over the accepted socket `fd` (which stays the caller's); null, with
    /// OpenSSL's queue cleared, if OpenSSL has no memory for it.
    SslPtr accept(int fd) const;

    /// The certificate serving `name` (lower case): exact names before wildcards, the latest
    /// expiry among equals; the default one if none covers it.
    std::size_t choose(std::string_view name) const;
    const Certificate& certificate(std::size_t index) const { return *served_[index].certificate; }
    std::size_t size() const { return served_.size(); }

    TlsContexts(const TlsContexts&) = delete;
    TlsContexts& operator=(const TlsContexts&) = delete;
    ~TlsContexts();

private:
    TlsContexts() = default;
    static int on_server_name(SSL* ssl, int* alert, void* self);

    struct Served {
        std::shared_ptr<const Certificate> certificate;
        SslCtxPtr context;
    };
    std::vector<Served> served_;
    std::size_t default_ = 0;
};

}  // namespace cspd
