#include "serving/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <system_error>

namespace cspd {
namespace {
[[noreturn]] void fail(int fd, const std::string& what) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw std::system_error(err, std::system_category(), what);
}
}  // namespace

int open_listener(const std::string& address, unsigned short port) {
    sockaddr_storage storage{};
    socklen_t length;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
    if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof *v4;
    } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof *v6;
    } else {
        throw std::invalid_argument("'" + address + "' is not an IPv4 or IPv6 address");
    }
    const std::string where = "[" + address + "]:" + std::to_string(port);
    int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(fd, "socket");
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // Every loop of every worker listens on the same port; the kernel spreads connections.
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) fail(fd, "SO_REUSEPORT");
    if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) fail(fd, "cannot listen on " + where);
    // Accepted sockets inherit TCP_NODELAY from the listener: one setsockopt instead of one per connection.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Wake accept only once the request's first bytes are in (nginx's "deferred"): the
    // connection can then be answered at once, and silent connections cost no wake-up.
    int defer_seconds = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_seconds, sizeof defer_seconds);
    if (::listen(fd, SOMAXCONN) != 0) fail(fd, "cannot listen on " + where);
    return fd;
}

HostPort parse_host_port(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon + 1 == text.size())
        throw std::invalid_argument("'" + text + "' is not ADDRESS:PORT");
    HostPort result;
    result.address = text.substr(0, colon);
    if (result.address.size() >= 2 && result.address.front() == '[' && result.address.back() == ']')
        result.address = result.address.substr(1, result.address.size() - 2);
    unsigned long port = 0;
    for (char c : text.substr(colon + 1)) {
        if (c < '0' || c > '9' || (port = port * 10 + unsigned(c - '0')) > 65535)
            throw std::invalid_argument("'" + text + "': the port must be a number from 0 to 65535");
    }
    result.port = static_cast<unsigned short>(port);
    return result;
}

unsigned short bound_port(int fd) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0)
        throw std::system_error(errno, std::system_category(), "getsockname");
    if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
    return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

}  // namespace cspd
