// The epoll ceiling: one thread, level-triggered epoll, accept4 until EAGAIN, one read and one
// write per ready connection and pass, canned responses. What cspd's own epoll path would cost
// if it did nothing but move bytes. Usage: epoll_ceiling PORT HELLO_FILE XPNG_FILE
#include "canned.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

struct Connection {
    std::string in, out;  // bytes of a request cut short; bytes the socket did not take yet
    bool close = false;
    bool open = false;
};

}  // namespace

int main(int argc, char** argv) {
    if (!ceiling::usage_ok(argc, argv)) return 2;
    ceiling::CannedResponses canned(argv[2], argv[3]);
    const int listener = ceiling::listen_on(std::atoi(argv[1]), SOCK_NONBLOCK);
    const int poller = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event event{EPOLLIN, {.fd = listener}};
    ::epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    std::vector<Connection> connections(1024);
    std::vector<epoll_event> ready(512);
    char buffer[64 * 1024];

    const auto finish = [&](int fd) {
        connections[fd] = Connection{};
        ::close(fd);
    };
    // Writes what is queued; false once the connection is gone.
    const auto flush = [&](int fd, Connection& c) {
        while (!c.out.empty()) {
            const ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno != EAGAIN) return finish(fd), false;
                epoll_event want{EPOLLIN | EPOLLOUT, {.fd = fd}};
                ::epoll_ctl(poller, EPOLL_CTL_MOD, fd, &want);
                return true;
            }
            c.out.erase(0, static_cast<std::size_t>(n));
        }
        if (c.close) return finish(fd), false;
        return true;
    };

    // One recv, and the replies to what it brought in one send.
    const auto serve = [&](int fd) {
        Connection& c = connections[fd];
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            if (n < 0 && errno == EAGAIN) return;
            return finish(fd);
        }
        std::string_view in(buffer, static_cast<std::size_t>(n));
        if (!c.in.empty()) {
            c.in.append(in);
            in = c.in;
        }
        const std::size_t used = ceiling::answer_requests(in, canned, c.out, c.close);
        std::string rest(in.substr(used));
        c.in = std::move(rest);
        flush(fd, c);
    };

    for (;;) {
        const int count = ::epoll_wait(poller, ready.data(), static_cast<int>(ready.size()), -1);
        canned.refresh();
        for (int i = 0; i < count; ++i) {
            const int fd = ready[i].data.fd;
            if (fd == listener) {
                for (;;) {
                    const int client = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (client < 0) break;
                    if (static_cast<std::size_t>(client) >= connections.size()) connections.resize(client * 2);
                    connections[client].open = true;
                    epoll_event want{EPOLLIN, {.fd = client}};
                    ::epoll_ctl(poller, EPOLL_CTL_ADD, client, &want);
                    serve(client);  // TCP_DEFER_ACCEPT: the request is usually there already
                }
                continue;
            }
            Connection& c = connections[fd];
            if (!c.open) continue;
            if (ready[i].events & EPOLLOUT) {
                if (!flush(fd, c)) continue;
                if (c.out.empty()) {
                    epoll_event want{EPOLLIN, {.fd = fd}};
                    ::epoll_ctl(poller, EPOLL_CTL_MOD, fd, &want);
                }
            }
            if (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) serve(fd);
        }
    }
}
