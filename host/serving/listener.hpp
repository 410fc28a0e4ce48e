// Listening sockets, opened before any event loop exists: the master opens one per
// worker (all SO_REUSEPORT on one port) and hands each down at spawn, so a worker that
// dies leaves its socket, and the connections queued on it, to its replacement.
#pragma once

#include <string>
#include <vector>

namespace cspd {

/// A listening TCP socket on `address`:`port` (0: any free port) with SO_REUSEPORT,
/// TCP_NODELAY (inherited by accepted sockets) and TCP_DEFER_ACCEPT. Close-on-exec and
/// non-blocking. Throws with the reason (bad address, in use) on failure. The first socket of
/// an address (`joining` false) must find nobody listening there already, whoever it is (it is
/// named when it can be found): SO_REUSEPORT shares a port with this server's own sockets only.
/// The others (`joining`) join it. `address` may be bracketed ("[::1]"); an IPv6 one listens
/// for IPv6 only (IPV6_V6ONLY), so that 0.0.0.0 and :: can be listened on side by side.
int open_listener(const std::string& address, unsigned short port, bool joining = false);

/// "0.0.0.0:8080", "[::1]:8080": as logs and messages show where a socket listens.
std::string listening_address(const std::string& address, unsigned short port);
/// The same for each of `addresses`, joined with " and ".
std::string listening_addresses(const std::vector<std::string>& addresses, unsigned short port);

/// "127.0.0.1:9100" or "[::1]:9100" → address and port. Throws std::invalid_argument.
struct HostPort {
    std::string address;
    unsigned short port = 0;
};
HostPort parse_host_port(const std::string& text);

/// The port a socket is bound to.
unsigned short bound_port(int fd);

}  // namespace cspd
