// The TLS record layer of one connection, inside its Transport: reads and writes carry
// plaintext, the handshake runs inside the first reads, and a file is read and encrypted where
// plain TCP would use sendfile. Non-blocking throughout: "would block" is a result, and a read
// that needs room to write (a handshake flight the socket did not take) says so, so the
// transport waits for the right thing. A first byte that cannot begin a TLS record is plain
// HTTP sent to the HTTPS port: it gets a 400 in cleartext, as nginx answers it, and a close.
// Loop thread only.
#pragma once

#include "serving/transport/transport.hpp"
#include "stats/tls_counters.hpp"
#include "tls/openssl_types.hpp"

#include <memory>

namespace cspd {

class TlsContexts;
struct LoopSlot;

class TlsStream {
public:
    /// Over the accepted socket `fd` (still the transport's), with the certificates of `contexts`
    /// (held as long as this stream), counting its handshake in `counters` (if any). Null if
    /// OpenSSL has no memory.
    static std::unique_ptr<TlsStream> accept(std::shared_ptr<const TlsContexts> contexts, int fd, LoopSlot* counters);

    Transport::Moved read(int fd, char* into, std::size_t room);
    Transport::Moved write(std::string_view bytes);
    /// Encrypts up to one record of `file` from `offset`: `done` with the bytes taken (0: the
    /// file ends before `offset`), or `would_block`.
    Transport::Moved send_file(int file, std::uint64_t offset, std::size_t count);

    /// The last read stopped because the handshake's reply did not fit the socket: wait for room
    /// to write, then read again.
    bool read_needs_room() const { return read_needs_room_; }
    /// Bytes OpenSSL holds and has not handed out (decrypted, or read ahead and not yet
    /// decrypted): no readiness will announce them.
    bool has_buffered() const { return SSL_has_pending(ssl_.get()) == 1; }
    /// How many, at least (a record read ahead counts as one byte until it is decrypted).
    std::size_t buffered() const {
        const auto decrypted = static_cast<std::size_t>(SSL_pending(ssl_.get()));
        return decrypted ? decrypted : has_buffered() ? 1 : 0;
    }
    bool handshake_done() const { return SSL_is_init_finished(ssl_.get()) == 1; }
    /// ALPN chose HTTP/2 ("h2") in the handshake.
    bool chose_h2() const {
        const unsigned char* chosen = nullptr;
        unsigned int size = 0;
        SSL_get0_alpn_selected(ssl_.get(), &chosen, &size);
        return size == 2 && chosen[0] == 'h' && chosen[1] == '2';
    }

    /// The handshake was given up (it stalled): counted as such.
    void count_timeout() { count_failure(TlsFailure::timeout); }

    /// Sends close_notify once, without waiting for the peer's: before a half-close or a close
    /// of a connection that has not failed.
    void say_goodbye();

    TlsStream(std::shared_ptr<const TlsContexts> contexts, SslPtr ssl, LoopSlot* counters) noexcept
        : contexts_(std::move(contexts)), ssl_(std::move(ssl)), counters_(counters) {}

private:
    Transport::Io after_failure(int result, bool reading);
    Transport::Moved answer_plain_http(int fd);
    /// Once per connection: the handshake ended, well (its version, resumed or not) or not.
    void count_handshake();
    void count_failure(TlsFailure why);

    std::shared_ptr<const TlsContexts> contexts_;
    SslPtr ssl_;
    LoopSlot* counters_;
    bool counted_ = false;           // the handshake's outcome is counted
    bool looked_ = false;            // the first byte has been seen to begin a TLS record
    bool read_needs_room_ = false;
    bool failed_ = false;            // a fatal error: no close_notify, no more calls into OpenSSL
    bool said_goodbye_ = false;
};

}  // namespace cspd
