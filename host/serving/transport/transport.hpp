// The bytes of one client connection: a TCP socket, and on the HTTPS port a TLS record layer
// inside this class (TlsStream): reads and writes carry plaintext either way, a file is read
// and encrypted where plain TCP uses sendfile, and bytes TLS already holds make
// wait_readable() answer without the socket.
// Every recv, send and sendfile of a connection is here, in one place each: EINTR is retried
// there, and "would block" is a result, not an error; so is the one way to wait for
// readability (the loop's level-triggered ReadWatch), the wait for room to write (the
// reactor), the half-close before lingering, and the close.
//
// A protocol session owns its transport and is its TransportUser, held alive through
// TransportUser::share(): by the loop's read set from the first wait_readable() until close(),
// and by a wait for room until it fires or close() ends it. Loop thread only.
#pragma once

#include "serving/read_watch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace cspd {

/// Who a transport tells of readiness: the protocol session it carries.
class TransportUser : public ReadWatch::Reader {
public:
    /// Room to write came after a write that would have blocked.
    virtual void on_writable() = 0;
    /// The reference a wait holds: the user lives until its waits have fired or been ended.
    virtual std::shared_ptr<TransportUser> share() = 0;

protected:
    ~TransportUser() = default;
};

class TlsContexts;
class TlsStream;
struct LoopSlot;

class Transport {
public:
    enum class Io : std::uint8_t {
        done,         ///< bytes moved (`bytes` of them)
        would_block,  ///< nothing more now: wait for readiness
        closed,       ///< a read found the end of the stream (the peer closed its side)
        failed,       ///< the peer reset, or another socket error
    };
    struct Moved {
        Io io;
        std::size_t bytes;
    };

    /// Takes ownership of `fd`, a non-blocking connected socket, and watches it through `reads`.
    Transport(ReadWatch& reads, int fd, bool ipv6) noexcept : reads_(reads), fd_(fd), ipv6_(ipv6) {}
    /// Takes the connection over from `from` (which is left closed, without closing the socket):
    /// when a session hands it to another protocol's. No wait of `from` may be pending; its
    /// reader leaves the loop's set.
    explicit Transport(Transport&& from) noexcept;
    ~Transport();
    /// Speaks TLS from now on with the certificates of `contexts`, before any read. False (logged)
    /// if OpenSSL has no memory for it: the caller closes.
    bool start_tls(std::shared_ptr<const TlsContexts> contexts, LoopSlot* counters);
    /// The TLS handshake stalled and the connection is given up: counted as such.
    void handshake_timed_out();
    bool is_tls() const { return extras_ && extras_->tls; }
    /// Still in the TLS handshake (false for plain TCP).
    bool handshaking() const;
    /// TLS's ALPN chose HTTP/2.
    bool chose_h2() const;
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    bool is_open() const { return fd_ >= 0; }
    /// For the crash reporter's last-words answer only: nothing else writes around the transport
    /// (-1 over TLS, where bytes written around it would break the records).
    int native_handle() const { return is_tls() ? -1 : fd_; }

    /// One read of up to `room` bytes.
    Moved read(char* into, std::size_t room);
    /// Writes what the socket takes of `bytes` without blocking: `done` when it took them all,
    /// `would_block` when it filled up (`bytes` says how many it took before).
    Moved write(std::string_view bytes);
    /// Sends up to `count` bytes of `file` from `offset` with one sendfile: `done` with what the
    /// socket took (0: the file ends before `offset`), or `would_block`.
    Moved send_file(int file, std::uint64_t offset, std::size_t count);
    /// Reads and drops what has come, until the socket would block (`would_block`) or the
    /// stream ended (`closed`, `failed`). For lingering after a final answer.
    Io discard_input();
    /// Bytes that have come and were not read yet (0 if the kernel cannot tell).
    std::size_t unread_bytes() const;

    /// `user.on_readable()` runs once, when the socket has bytes, EOF or an error (at once if it
    /// has now). Between keep-alive requests this costs no syscall. False if the loop's set
    /// refuses the socket (logged): the caller closes.
    bool wait_readable(TransportUser& user);
    /// `user.on_writable()` runs once when the socket takes bytes again. False if the reactor
    /// cannot watch the socket (logged): the caller closes.
    bool wait_writable(TransportUser& user);

    /// Says we will send no more (TLS close_notify, then FIN) while reads go on; false if the
    /// socket refused.
    bool shutdown_write();
    /// Closes the socket (after a TLS close_notify if the session is sound): waits end without
    /// calling their users, and the users are let go.
    void close();

private:
    bool ensure_reactor_socket();
    /// `user.on_readable()` (reading) or `user.on_writable()` once the socket takes bytes again.
    bool wait_for_room(TransportUser& user, bool reading);

    // The io_context's own executor type: 8 bytes where any_io_executor takes 48.
    using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;
    // What only some connections need, in one allocation made when first needed, so that an idle
    // plain connection stays one pointer larger than its descriptor.
    struct Extras {
        std::unique_ptr<Socket> socket;  // made, and owning fd_, once the reactor must watch it
        std::unique_ptr<TlsStream> tls;
        ~Extras();
    };
    bool ensure_extras();

    ReadWatch& reads_;
    std::unique_ptr<Extras> extras_;
    int fd_;
    bool ipv6_;
};

}  // namespace cspd
