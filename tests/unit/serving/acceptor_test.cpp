// The acceptor on a real listening socket: every queued connection is handed on, a drain
// takes the backlog without waiting, and a closed acceptor takes nothing more.
#include "serving/acceptor.hpp"

#include "serving/listener.hpp"

#include "loopback.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include <fcntl.h>
#include <poll.h>

namespace cspd {
namespace {
using namespace std::chrono_literals;

/// A client that connects and sends a byte (the listener defers accept until data arrives).
int connect_and_send(unsigned short port) {
    const int fd = test::connect_loopback(port);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::send(fd, "G", 1, MSG_NOSIGNAL), 1);
    return fd;
}

struct AcceptorTest : ::testing::Test {
    AcceptorTest() {
        listen_fd = open_listener("127.0.0.1", 0);
        port = bound_port(listen_fd);
        acceptor.adopt(listen_fd);
    }
    ~AcceptorTest() override {
        for (int fd : clients) ::close(fd);
        for (int fd : accepted) ::close(fd);
    }
    bool run_until(std::size_t count) {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (accepted.size() < count && std::chrono::steady_clock::now() < deadline) {
            io.run_for(10ms);
            io.restart();
        }
        return accepted.size() >= count;
    }
    /// Waits (up to 100 ms) until a connection with its first bytes is queued on the listener.
    bool connection_queued() {
        pollfd ready{listen_fd, POLLIN, 0};
        return ::poll(&ready, 1, 100) == 1;
    }

    boost::asio::io_context io;
    std::vector<int> accepted, clients;
    std::vector<unsigned short> peer_ports;
    Acceptor acceptor{io, "test", [this](int fd, const boost::asio::ip::tcp::endpoint& peer) {
                          accepted.push_back(fd);
                          peer_ports.push_back(peer.port());
                      }};
    unsigned short port = 0;
    int listen_fd = -1;  // the acceptor's
};

TEST_F(AcceptorTest, HandsOnEveryConnectionWithItsPeer) {
    acceptor.start();
    for (int i = 0; i < 100; ++i) clients.push_back(connect_and_send(port));  // more than one batch
    ASSERT_TRUE(run_until(100)) << accepted.size();
    for (unsigned short p : peer_ports) EXPECT_NE(p, 0);
    for (int fd : accepted) EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
}

TEST_F(AcceptorTest, TakesTheBacklogWithoutWaiting) {
    for (int i = 0; i < 5; ++i) clients.push_back(connect_and_send(port));
    // take_backlog never waits: call it each time the queue holds a connection, until all five
    // handshakes and bytes have landed.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (accepted.size() < 5 && std::chrono::steady_clock::now() < deadline)
        if (connection_queued()) acceptor.take_backlog();
    EXPECT_EQ(accepted.size(), 5u);
    EXPECT_EQ(io.poll(), 0u);  // nothing was waiting on the loop: the backlog was taken synchronously
}

TEST_F(AcceptorTest, TakesNothingOnceClosed) {
    acceptor.start();
    clients.push_back(connect_and_send(port));
    ASSERT_TRUE(connection_queued());  // a connection waits to be taken...
    acceptor.close();
    EXPECT_FALSE(acceptor.is_open());
    io.run_for(50ms);
    EXPECT_TRUE(accepted.empty());  // ...and is not, once the acceptor is closed
}

}  // namespace
}  // namespace cspd
