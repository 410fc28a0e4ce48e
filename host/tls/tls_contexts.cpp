#include "tls/tls_contexts.hpp"

#include "common/ascii.hpp"
#include "tls/ticket_keys.hpp"

#include <openssl/err.h>

#include <stdexcept>

namespace cspd {
namespace {
// Mozilla's "intermediate" configuration (guidelines 5.7/6.0): ECDHE with AEAD for TLS 1.2, the
// three TLS 1.3 suites, and no DHE (no parameters to keep).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kTls13Suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* kGroups = "X25519:prime256v1:secp384r1";
// What ALPN may choose, in wire format, in the server's order of preference (RFC 7301 §3.2).
constexpr unsigned char kAlpnHttp1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char kAlpnHttp2[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr unsigned char kSessionContext[] = {'c', 's', 'p', 'd'};

[[noreturn]] void fail_context(const char* what) {
    throw std::runtime_error(std::string("TLS set-up: ") + what + ": " + take_openssl_errors());
}

int choose_alpn(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* offered,
                unsigned int offered_size, void* http2) {
    unsigned char* chosen = nullptr;
    const bool h2 = http2 != nullptr;
    if (SSL_select_next_proto(&chosen, out_size, h2 ? kAlpnHttp2 : kAlpnHttp1, h2 ? sizeof kAlpnHttp2 : sizeof kAlpnHttp1,
                              offered, offered_size) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;  // RFC 7301 §3.2: no protocol in common
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

SslCtxPtr make_context(const Certificate& certificate, bool http2) {
    SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
    if (!ctx) fail_context("SSL_CTX_new");
    if (SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx.get(), TLS1_3_VERSION) != 1)
        fail_context("protocol versions");
    if (SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) fail_context("TLS 1.2 ciphers");
    if (SSL_CTX_set_ciphersuites(ctx.get(), kTls13Suites) != 1) fail_context("TLS 1.3 suites");
    if (SSL_CTX_set1_groups_list(ctx.get(), kGroups) != 1) fail_context("groups");
    // The server's order (every suite offered is strong; testssl.sh rates "no order" HIGH), ChaCha20
    // first for the clients that prefer it (phones without AES instructions).
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                                       SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA);
    SSL_CTX_set_mode(ctx.get(),
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    // Whole reads, not a record's header and then its body: one recv per read where there were two.
    // Bytes read ahead show in SSL_has_pending (TlsStream wakes its reader for them).
    SSL_CTX_set_read_ahead(ctx.get(), 1);
    SSL_CTX_set_max_early_data(ctx.get(), 0);  // no 0-RTT: replayable requests
    SSL_CTX_set_recv_max_early_data(ctx.get(), 0);
    // Resumption by tickets only (no per-process session cache a client's next worker lacks).
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx.get(), 1);
    SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext);
    TicketKeys::attach_to(ctx.get());  // keys every worker shares, when the process has them
    // The callback's argument says only whether h2 is offered (non-null: it is).
    static int offer_h2;
    SSL_CTX_set_alpn_select_cb(ctx.get(), choose_alpn, http2 ? &offer_h2 : nullptr);

    if (SSL_CTX_use_certificate(ctx.get(), certificate.leaf.get()) != 1) fail_context("certificate");
    for (const X509Ptr& link : certificate.chain)
        if (SSL_CTX_add1_chain_cert(ctx.get(), link.get()) != 1) fail_context("chain");
    if (SSL_CTX_use_PrivateKey(ctx.get(), certificate.key.get()) != 1) fail_context("private key");
    return ctx;
}
}  // namespace

TlsContexts::~TlsContexts() = default;

std::shared_ptr<const TlsContexts> TlsContexts::build(std::vector<std::shared_ptr<const Certificate>> certificates,
                                                      std::size_t default_index, bool http2) {
    if (certificates.empty()) throw std::runtime_error("TLS set-up: no certificate");
    std::shared_ptr<TlsContexts> contexts(new TlsContexts());
    contexts->default_ = default_index < certificates.size() ? default_index : 0;
    for (auto& certificate : certificates) {
        SslCtxPtr context = make_context(*certificate, http2);
        // Every context gets the callback: OpenSSL calls the one of the context a handshake began with.
        SSL_CTX_set_tlsext_servername_callback(context.get(), on_server_name);
        SSL_CTX_set_tlsext_servername_arg(context.get(), contexts.get());
        contexts->served_.push_back({std::move(certificate), std::move(context)});
    }
    return contexts;
}

SslPtr TlsContexts::accept(int fd) const {
    SslPtr ssl(SSL_new(served_[default_].context.get()));
    if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) {
        ERR_clear_error();
        return nullptr;
    }
    SSL_set_accept_state(ssl.get());
    return ssl;
}

std::size_t TlsContexts::choose(std::string_view name) const {
    std::size_t best = default_;
    int best_rank = 0;  // 2: exact name, 1: wildcard
    for (std::size_t i = 0; i < served_.size(); ++i) {
        const Certificate& candidate = *served_[i].certificate;
        int rank = 0;
        for (const std::string& dns : candidate.dns_names)
            if (dns == name) rank = 2;
        if (rank == 0 && certificate_covers(candidate, name)) rank = 1;
        if (rank == 0) continue;
        if (rank > best_rank || (rank == best_rank && candidate.not_after > served_[best].certificate->not_after)) {
            best = i;
            best_rank = rank;
        }
    }
    return best;
}

int TlsContexts::on_server_name(SSL* ssl, int*, void* self) {
    const auto& contexts = *static_cast<const TlsContexts*>(self);
    const char* sent = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (!sent) return SSL_TLSEXT_ERR_OK;  // no SNI: the default certificate
    std::string name(sent);
    if (!name.empty() && name.back() == '.') name.pop_back();
    for (char& c : name) c = ascii_lower(c);
    const std::size_t chosen = contexts.choose(name);
    if (chosen != contexts.default_) SSL_set_SSL_CTX(ssl, contexts.served_[chosen].context.get());
    // An unknown name gets the default certificate, as nginx answers it: the client judges.
    return SSL_TLSEXT_ERR_OK;
}

}  // namespace cspd
