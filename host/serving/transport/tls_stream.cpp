#include "serving/transport/tls_stream.hpp"

#include "stats/shared_stats.hpp"
#include "tls/key_client.hpp"
#include "tls/tls_contexts.hpp"

#include <openssl/err.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace cspd {
namespace {
// The first byte of a TLS handshake record (ContentType handshake).
constexpr unsigned char kHandshakeRecord = 0x16;
// One TLS record's worth of plaintext: what one encrypted file read takes.
constexpr std::size_t kRecordBytes = 16 * 1024;

constexpr std::string_view kPlainHttpAnswer =
    "HTTP/1.1 400 Bad Request\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 53\r\n"
    "Connection: close\r\n"
    "\r\n"
    "This port speaks HTTPS: ask for https:// URLs here.\r\n";
static_assert(kPlainHttpAnswer.size() - kPlainHttpAnswer.find("\r\n\r\n") - 4 == 53);
/// Why a handshake failed, from OpenSSL's first queued reason (left queued for the log).
TlsFailure why_failed(int ssl_error) {
    if (KeyClient::take_sign_failure()) return TlsFailure::key_process;
    const unsigned long code = ERR_peek_error();
    if (ssl_error == SSL_ERROR_SYSCALL && code == 0) return TlsFailure::peer_closed;
    if (ERR_GET_LIB(code) != ERR_LIB_SSL) return TlsFailure::other;
    switch (ERR_GET_REASON(code)) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_NO_PROTOCOLS_AVAILABLE: return TlsFailure::protocol_version;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
    case SSL_R_NO_SUITABLE_KEY_SHARE:
    case SSL_R_NO_APPLICATION_PROTOCOL: return TlsFailure::no_shared_cipher;
    default: return TlsFailure::bad_record;
    }
}
}  // namespace

std::unique_ptr<TlsStream> TlsStream::accept(std::shared_ptr<const TlsContexts> contexts, int fd, LoopSlot* counters) {
    SslPtr ssl = contexts->accept(fd);
    if (!ssl) return nullptr;
    return std::make_unique<TlsStream>(std::move(contexts), std::move(ssl), counters);
}

void TlsStream::count_handshake() {
    if (counted_ || !handshake_done()) return;
    counted_ = true;
    if (!counters_) return;
    const TlsVersion version = SSL_version(ssl_.get()) == TLS1_3_VERSION ? TlsVersion::tls13 : TlsVersion::tls12;
    bump(counters_->tls_handshakes[std::size_t(version)]);
    if (SSL_session_reused(ssl_.get())) bump(counters_->tls_resumed);
}

void TlsStream::count_failure(TlsFailure why) {
    if (counted_) return;
    counted_ = true;
    if (counters_) bump(counters_->tls_failures[std::size_t(why)]);
}

Transport::Moved TlsStream::answer_plain_http(int fd) {
    // What came is read and dropped first, so that closing does not reset the connection under the answer.
    char discard[4096];
    while (::recv(fd, discard, sizeof discard, MSG_DONTWAIT) > 0) {}
    ::send(fd, kPlainHttpAnswer.data(), kPlainHttpAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd, SHUT_WR);
    failed_ = true;
    count_failure(TlsFailure::plain_http);
    return {Transport::Io::failed, 0};
}

Transport::Moved TlsStream::read(int fd, char* into, std::size_t room) {
    if (failed_) return {Transport::Io::failed, 0};
    if (!looked_) {
        unsigned char first = 0;
        ssize_t n;
        do {
            n = ::recv(fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
            count_failure(TlsFailure::peer_closed);
            return {Transport::Io::closed, 0};
        }
        if (n < 0) return {errno == EAGAIN || errno == EWOULDBLOCK ? Transport::Io::would_block : Transport::Io::failed, 0};
        looked_ = true;
        if (first != kHandshakeRecord) {
            if (first >= 'A' && first <= 'Z') return answer_plain_http(fd);  // "GET ", "POST "...
            failed_ = true;
            count_failure(TlsFailure::bad_record);
            return {Transport::Io::failed, 0};
        }
    }
    read_needs_room_ = false;
    ERR_clear_error();
    std::size_t got = 0;
    const int result = SSL_read_ex(ssl_.get(), into, room, &got);
    if (!counted_) count_handshake();
    if (result == 1) return {Transport::Io::done, got};
    return {after_failure(result, true), 0};
}

Transport::Moved TlsStream::write(std::string_view bytes) {
    if (failed_) return {Transport::Io::failed, 0};
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        ERR_clear_error();
        std::size_t n = 0;
        const int result = SSL_write_ex(ssl_.get(), bytes.data() + sent, bytes.size() - sent, &n);
        if (result == 1) {
            sent += n;  // a record at a time (partial writes): the rest goes on
            continue;
        }
        return {after_failure(result, false), sent};
    }
    return {Transport::Io::done, sent};
}

Transport::Moved TlsStream::send_file(int file, std::uint64_t offset, std::size_t count) {
    if (failed_) return {Transport::Io::failed, 0};
    // After "would block" the same bytes are read again at the same offset: OpenSSL wants the
    // record it began retried with the same plaintext.
    char chunk[kRecordBytes];
    ssize_t got;
    do {
        got = ::pread(file, chunk, std::min(count, sizeof chunk), static_cast<off_t>(offset));
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        spdlog::warn("reading a file to send over TLS: {}", std::strerror(errno));
        return {Transport::Io::failed, 0};
    }
    if (got == 0) return {Transport::Io::done, 0};  // the file shrank
    return write(std::string_view(chunk, static_cast<std::size_t>(got)));
}

Transport::Io TlsStream::after_failure(int result, bool reading) {
    const int error = SSL_get_error(ssl_.get(), result);
    switch (error) {
    case SSL_ERROR_WANT_READ:
        if (reading) return Transport::Io::would_block;
        break;  // a write that waits for the peer: not in TLS 1.2/1.3 without renegotiation
    case SSL_ERROR_WANT_WRITE:
        if (reading) read_needs_room_ = true;
        return Transport::Io::would_block;
    case SSL_ERROR_ZERO_RETURN:  // close_notify (or EOF, see IGNORE_UNEXPECTED_EOF)
        count_failure(TlsFailure::peer_closed);  // counts only before the handshake ended
        return Transport::Io::closed;
    default: break;
    }
    failed_ = true;
    if (!counted_) count_failure(why_failed(error));
    const std::string why = take_openssl_errors();
    if (!why.empty()) spdlog::debug("TLS connection failed{}: {}", handshake_done() ? "" : " in the handshake", why);
    return Transport::Io::failed;
}

void TlsStream::say_goodbye() {
    if (failed_ || said_goodbye_ || !handshake_done()) return;
    said_goodbye_ = true;
    ERR_clear_error();
    SSL_shutdown(ssl_.get());  // sends close_notify; the peer's is not waited for
    ERR_clear_error();
}

}  // namespace cspd
