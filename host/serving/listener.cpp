#include "serving/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace cspd {
namespace {
[[noreturn]] void fail(int fd, const std::string& what) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw std::system_error(err, std::system_category(), what);
}
/// The socket inodes listening on `port` (any address), from /proc/net/tcp and tcp6.
std::vector<std::string> listening_inodes(unsigned short port) {
    std::vector<std::string> inodes;
    char wanted[8];
    std::snprintf(wanted, sizeof wanted, ":%04X", port);
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line);  // the heading
        while (std::getline(in, line)) {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            if (state == "0A" && local.ends_with(wanted)) inodes.push_back(inode);  // 0A: LISTEN
        }
    }
    return inodes;
}

/// "pid 123 (cspd)" for the process holding a socket listening on `port`, or empty if none can
/// be seen (another user's processes are hidden from an unprivileged one).
std::string who_listens(unsigned short port) {
    const std::vector<std::string> inodes = listening_inodes(port);
    if (inodes.empty()) return {};
    std::error_code ec;
    for (const auto& process : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = process.path().filename();
        if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
        std::error_code fd_ec;
        for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", fd_ec)) {
            const std::string target = std::filesystem::read_symlink(fd.path(), fd_ec).string();
            for (const auto& inode : inodes)
                if (target == "socket:[" + inode + "]") {
                    std::ifstream comm(process.path() / "comm");
                    std::string name;
                    std::getline(comm, name);
                    return "pid " + pid + " (" + name + ")";
                }
        }
    }
    return {};
}

/// Throws when another socket already listens on the address, as a bind without SO_REUSEPORT
/// tells: SO_REUSEPORT would otherwise let a second server share the port with no error and
/// take part of its connections. SO_REUSEADDR, as the real socket has: a port whose last
/// connections linger in TIME_WAIT is free.
void refuse_if_taken(const sockaddr_storage& storage, socklen_t length, unsigned short port, const std::string& where) {
    const int probe = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) fail(probe, "socket");
    int one = 1;
    ::setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (storage.ss_family == AF_INET6) ::setsockopt(probe, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    const bool taken = ::bind(probe, reinterpret_cast<const sockaddr*>(&storage), length) != 0 && errno == EADDRINUSE;
    ::close(probe);
    if (!taken) return;
    const std::string owner = who_listens(port);
    throw std::runtime_error("cannot listen on " + where + ": address in use: another process already listens there" +
                             (owner.empty() ? std::string() : " (" + owner + ")") +
                             "; stop it, or give this server another --port or --bind");
}
}  // namespace

std::string listening_address(const std::string& address, unsigned short port) {
    const bool v6 = address.find(':') != std::string::npos && !address.starts_with('[');
    return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

std::string listening_addresses(const std::vector<std::string>& addresses, unsigned short port) {
    std::string text;
    for (const std::string& address : addresses) {
        if (!text.empty()) text += " and ";
        text += listening_address(address, port);
    }
    return text;
}

int open_listener(const std::string& bracketed, unsigned short port, bool joining) {
    const std::string address = bracketed.size() >= 2 && bracketed.front() == '[' && bracketed.back() == ']'
                                    ? bracketed.substr(1, bracketed.size() - 2)
                                    : bracketed;
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
    if (!joining && port != 0) refuse_if_taken(storage, length, port, where);
    int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(fd, "socket");
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // [::] is IPv6's alone: 0.0.0.0 beside it is another --bind, not a conflict.
    if (storage.ss_family == AF_INET6 && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0)
        fail(fd, "IPV6_V6ONLY");
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
