// Owning pointers for the OpenSSL objects cspd keeps, and the text of OpenSSL's error queue.
#pragma once

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace cspd {

struct OpenSslFree {
    void operator()(X509* p) const noexcept { X509_free(p); }
    void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
    void operator()(SSL_CTX* p) const noexcept { SSL_CTX_free(p); }
    void operator()(SSL* p) const noexcept { SSL_free(p); }
    void operator()(BIO* p) const noexcept { BIO_free(p); }
};
using X509Ptr = std::unique_ptr<X509, OpenSslFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslFree>;
using SslPtr = std::unique_ptr<SSL, OpenSslFree>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree>;

/// The reasons OpenSSL queued on this thread, oldest first ("; "-separated), and an empty queue after.
std::string take_openssl_errors();

}  // namespace cspd
