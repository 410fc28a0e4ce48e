#include "load_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace cspd::test {
namespace {

struct Client {
    int fd = -1;
    bool connected = false;
    std::string in;
    std::size_t sent = 0;
};

/// Length of the first complete response in `in` and its status; 0 if incomplete.
std::size_t complete_response(const std::string& in, int& status) {
    auto head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos) return 0;
    status = std::atoi(in.c_str() + 9);
    std::size_t length = 0;
    auto cl = in.find("Content-Length: ");
    if (cl != std::string::npos && cl < head_end) length = std::strtoul(in.c_str() + cl + 16, nullptr, 10);
    const std::size_t total = head_end + 4 + length;
    return in.size() >= total ? total : 0;
}

}  // namespace

LoadResult run_load(const LoadOptions& options) {
    LoadResult result;
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) throw std::runtime_error("epoll_create1");
    std::vector<Client> clients(options.connections);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(options.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (std::size_t i = 0; i < clients.size(); ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            ++result.failures;
            continue;
        }
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
            ::close(fd);
            ++result.failures;
            continue;
        }
        clients[i].fd = fd;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.u64 = i;
        ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }

    const auto start = std::chrono::steady_clock::now();
    const auto end = start + options.duration;
    int reported = 0;
    std::vector<epoll_event> events(1024);
    char buffer[16384];
    while (std::chrono::steady_clock::now() < end) {
        int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
        for (int e = 0; e < n; ++e) {
            Client& c = clients[events[e].data.u64];
            if (c.fd < 0) continue;
            auto fail = [&] {
                ::close(c.fd);
                c.fd = -1;
                ++result.failures;
            };
            if (events[e].events & (EPOLLERR | EPOLLHUP)) {
                fail();
                continue;
            }
            if (!c.connected && (events[e].events & EPOLLOUT)) {
                c.connected = true;
                ++result.connected;
                epoll_event ev{};
                ev.events = EPOLLIN;
                ev.data.u64 = events[e].data.u64;
                ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
                if (::send(c.fd, options.request.data(), options.request.size(), MSG_NOSIGNAL) !=
                    static_cast<ssize_t>(options.request.size())) {
                    fail();
                }
                continue;
            }
            if (events[e].events & EPOLLIN) {
                ssize_t got = ::recv(c.fd, buffer, sizeof buffer, 0);
                if (got <= 0) {
                    if (got < 0 && errno == EAGAIN) continue;
                    fail();
                    continue;
                }
                c.in.append(buffer, static_cast<std::size_t>(got));
                int status = 0;
                while (std::size_t used = complete_response(c.in, status)) {
                    c.in.erase(0, used);
                    if (status == 200)
                        ++result.responses;
                    else
                        ++result.bad_status;
                    if (::send(c.fd, options.request.data(), options.request.size(), MSG_NOSIGNAL) !=
                        static_cast<ssize_t>(options.request.size())) {
                        fail();
                        break;
                    }
                }
            }
        }
        const int elapsed = static_cast<int>(
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count());
        if (options.every_second && elapsed > reported) {
            reported = elapsed;
            options.every_second(elapsed);
        }
    }
    for (Client& c : clients)
        if (c.fd >= 0) ::close(c.fd);
    ::close(ep);
    return result;
}

}  // namespace cspd::test
