#include "serving/transport/transport.hpp"

#include "serving/transport/tls_stream.hpp"
#include "tls/tls_contexts.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace cspd {
using tcp = boost::asio::ip::tcp;

namespace {
bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }
}  // namespace

Transport::Extras::~Extras() = default;

Transport::Transport(Transport&& from) noexcept
    : reads_(from.reads_), extras_(std::move(from.extras_)), fd_(from.fd_), ipv6_(from.ipv6_) {
    reads_.forget(fd_);  // the set holds the old session as its reader: the new one watches anew
    from.fd_ = -1;
}

Transport::~Transport() {
    // Not close(): the loop's set holds its users alive, so a transport that dies is in none, and
    // at the loop's end that set may be gone first. The reactor's socket closes itself.
    if (fd_ >= 0 && !(extras_ && extras_->socket)) ::close(fd_);
}

bool Transport::ensure_extras() {
    if (extras_) return true;
    extras_.reset(new (std::nothrow) Extras());
    return extras_ != nullptr;
}

bool Transport::start_tls(std::shared_ptr<const TlsContexts> contexts, LoopSlot* counters) {
    if (ensure_extras()) extras_->tls = TlsStream::accept(std::move(contexts), fd_, counters);
    if (is_tls()) return true;
    spdlog::error("no memory for a TLS session; closing the connection");
    return false;
}

void Transport::handshake_timed_out() {
    if (is_tls()) extras_->tls->count_timeout();
}

bool Transport::handshaking() const { return is_tls() && !extras_->tls->handshake_done(); }

bool Transport::chose_h2() const { return is_tls() && extras_->tls->chose_h2(); }

Transport::Moved Transport::read(char* into, std::size_t room) {
    if (is_tls()) return extras_->tls->read(fd_, into, room);
    ssize_t n;
    do {
        n = ::recv(fd_, into, room, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) return {Io::done, static_cast<std::size_t>(n)};
    if (n == 0) return {Io::closed, 0};
    return {would_block() ? Io::would_block : Io::failed, 0};
}

Transport::Moved Transport::write(std::string_view bytes) {
    if (is_tls()) return extras_->tls->write(bytes);
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (would_block()) return {Io::would_block, sent};
        return {Io::failed, sent};
    }
    return {Io::done, sent};
}

Transport::Moved Transport::send_file(int file, std::uint64_t offset, std::size_t count) {
    if (is_tls()) return extras_->tls->send_file(file, offset, count);
    for (;;) {
        off_t at = static_cast<off_t>(offset);
        const ssize_t n = ::sendfile(fd_, file, &at, count);
        if (n >= 0) return {Io::done, static_cast<std::size_t>(n)};
        if (errno == EINTR) continue;
        return {would_block() ? Io::would_block : Io::failed, 0};
    }
}

Transport::Io Transport::discard_input() {
    char discard[4096];
    for (;;) {
        const Moved got = read(discard, sizeof discard);
        if (got.io != Io::done) return got.io;
    }
}

std::size_t Transport::unread_bytes() const {
    int unread = 0;
    const std::size_t in_tls = is_tls() ? extras_->tls->buffered() : 0;
    return in_tls + (::ioctl(fd_, FIONREAD, &unread) == 0 && unread > 0 ? static_cast<std::size_t>(unread) : 0);
}

bool Transport::wait_readable(TransportUser& user) {
    if (is_tls()) {
        TlsStream& tls = *extras_->tls;
        if (tls.read_needs_room()) return wait_for_room(user, true);
        if (tls.has_buffered()) {
            // Decrypted already: the socket may never become readable for it.
            boost::asio::post(reads_.io(), [user = user.share()] { user->on_readable(); });
            return true;
        }
    }
    if (reads_.rewatch(fd_)) return true;  // between keep-alive requests: already in the set
    // ReadWatch::watch logs why when the kernel refuses.
    return reads_.watch(fd_, user.share());
}

bool Transport::ensure_reactor_socket() {
    if (!ensure_extras()) {
        spdlog::error("no memory to watch a connection for room to write; closing it");
        return false;
    }
    std::unique_ptr<Socket>& socket = extras_->socket;
    if (socket) return true;
    boost::system::error_code ec;
    try {
        socket = std::make_unique<Socket>(reads_.io().get_executor());
    } catch (const std::bad_alloc&) {
        spdlog::error("no memory to watch a connection for room to write; closing it");
        return false;
    }
    socket->assign(ipv6_ ? tcp::v6() : tcp::v4(), fd_, ec);
    if (ec) {
        spdlog::warn("cannot watch a connection for room to write: {}; closing it", ec.message());
        socket.reset();  // fd_ is still ours alone
        return false;
    }
    return true;
}

bool Transport::wait_for_room(TransportUser& user, bool reading) {
    if (!ensure_reactor_socket()) return false;
    extras_->socket->async_wait(tcp::socket::wait_write,
                                [user = user.share(), reading](const boost::system::error_code& ec) {
                                    if (ec) return;
                                    if (reading)
                                        user->on_readable();
                                    else
                                        user->on_writable();
                                });
    return true;
}

bool Transport::wait_writable(TransportUser& user) { return wait_for_room(user, false); }

bool Transport::shutdown_write() {
    if (is_tls()) extras_->tls->say_goodbye();
    return ::shutdown(fd_, SHUT_WR) == 0;
}

void Transport::close() {
    if (fd_ < 0) return;
    reads_.forget(fd_);
    if (is_tls()) extras_->tls->say_goodbye();
    if (extras_ && extras_->socket) {
        boost::system::error_code ec;
        extras_->socket->close(ec);  // a wait for room ends as aborted, and lets its user go
    } else {
        ::close(fd_);
    }
    fd_ = -1;
}

}  // namespace cspd
