#include "serving/transport/transport.hpp"

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

Transport::~Transport() {
    // Not close(): the loop's set holds its users alive, so a transport that dies is in none, and
    // at the loop's end that set may be gone first. The reactor's socket closes itself.
    if (fd_ >= 0 && !socket_) ::close(fd_);
}

Transport::Moved Transport::read(char* into, std::size_t room) {
    ssize_t n;
    do {
        n = ::recv(fd_, into, room, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) return {Io::done, static_cast<std::size_t>(n)};
    if (n == 0) return {Io::closed, 0};
    return {would_block() ? Io::would_block : Io::failed, 0};
}

Transport::Moved Transport::write(std::string_view bytes) {
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
    return ::ioctl(fd_, FIONREAD, &unread) == 0 && unread > 0 ? static_cast<std::size_t>(unread) : 0;
}

bool Transport::wait_readable(TransportUser& user) {
    if (reads_.rewatch(fd_)) return true;  // between keep-alive requests: already in the set
    // ReadWatch::watch logs why when the kernel refuses.
    return reads_.watch(fd_, user.share());
}

bool Transport::ensure_reactor_socket() {
    if (socket_) return true;
    boost::system::error_code ec;
    try {
        socket_ = std::make_unique<Socket>(reads_.io().get_executor());
    } catch (const std::bad_alloc&) {
        spdlog::error("no memory to watch a connection for room to write; closing it");
        return false;
    }
    socket_->assign(ipv6_ ? tcp::v6() : tcp::v4(), fd_, ec);
    if (ec) {
        spdlog::warn("cannot watch a connection for room to write: {}; closing it", ec.message());
        socket_.reset();  // fd_ is still ours alone
        return false;
    }
    return true;
}

bool Transport::wait_writable(TransportUser& user) {
    if (!ensure_reactor_socket()) return false;
    socket_->async_wait(tcp::socket::wait_write, [user = user.share()](const boost::system::error_code& ec) {
        if (!ec) user->on_writable();
    });
    return true;
}

bool Transport::shutdown_write() { return ::shutdown(fd_, SHUT_WR) == 0; }

void Transport::close() {
    if (fd_ < 0) return;
    reads_.forget(fd_);
    if (socket_) {
        boost::system::error_code ec;
        socket_->close(ec);  // a wait for room ends as aborted, and lets its user go
    } else {
        ::close(fd_);
    }
    fd_ = -1;
}

}  // namespace cspd
