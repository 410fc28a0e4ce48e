// The helpers for tests of topics across hosts check themselves: a redis-server of the test's own
// that can die, come back empty and pause, and a forwarder that cuts and stalls connections.
// Times are asserted only from below (a cutter never lets a byte through before a stall ends),
// with generous bounds above: machines are noisy.
#include "loopback.hpp"
#include "redis_server.hpp"
#include "tcp_cutter.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace cspd::test {
namespace {

using namespace std::chrono_literals;
using SupportTestClock = std::chrono::steady_clock;

struct SupportTestRead {
    std::string bytes;
    bool ended = false;  // EOF or an error: the connection is gone
    int error = 0;       // the error, if one
};

// Reads until `want` bytes came, the connection ended, or `timeout` passed.
SupportTestRead support_test_read(int fd, std::size_t want, std::chrono::milliseconds timeout) {
    SupportTestRead got;
    const auto deadline = SupportTestClock::now() + timeout;
    while (got.bytes.size() < want) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SupportTestClock::now());
        pollfd waiting{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&waiting, 1, static_cast<int>(left.count())) == 0) break;
        char chunk[256];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n > 0) {
            got.bytes.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            got.ended = true;
            got.error = n == 0 ? 0 : errno;
            break;
        }
    }
    return got;
}

bool support_test_send_ping(int fd) { return ::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6; }

bool support_test_ping(int fd, std::chrono::milliseconds timeout = 5s) {
    return support_test_send_ping(fd) && support_test_read(fd, 7, timeout).bytes == "+PONG\r\n";
}

TEST(RedisServerSupport, StartsPausesAndComesBackEmpty) {
    RedisServer redis;
    EXPECT_EQ(redis.url(), "redis://127.0.0.1:" + std::to_string(redis.port()));
    EXPECT_EQ(redis.command({"SET", "greeting", "two\r\nlines"}), "+OK\r\n");
    EXPECT_EQ(redis.command({"GET", "greeting"}), "$10\r\ntwo\r\nlines\r\n");
    EXPECT_EQ(redis.command({"RPUSH", "letters", "a", "bc"}), ":2\r\n");
    EXPECT_EQ(redis.command({"LRANGE", "letters", "0", "-1"}), "*2\r\n$1\r\na\r\n$2\r\nbc\r\n");
    EXPECT_EQ(redis.command({"NO-SUCH-COMMAND"}).substr(0, 5), "-ERR ");

    // Paused: the kernel takes the connection and the bytes, nobody answers until it resumes.
    redis.pause();
    const int fd = connect_loopback(redis.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(support_test_send_ping(fd));
    EXPECT_EQ(support_test_read(fd, 7, 200ms).bytes, "") << "a stopped process answered";
    redis.resume();
    EXPECT_EQ(support_test_read(fd, 7, 5s).bytes, "+PONG\r\n");
    ::close(fd);

    const unsigned short port = redis.port();
    redis.kill_hard();
    EXPECT_THROW(redis.command({"PING"}), std::runtime_error);  // nobody listens
    redis.start_again();
    EXPECT_EQ(redis.port(), port);
    EXPECT_EQ(redis.command({"GET", "greeting"}), "$-1\r\n");  // nothing persisted
    EXPECT_EQ(redis.command({"DBSIZE"}), ":0\r\n");
}

TEST(TcpCutterSupport, ForwardsCutsAndStalls) {
    RedisServer redis;
    TcpCutter cutter(redis.port());

    const int held = connect_loopback(cutter.port());
    ASSERT_GE(held, 0);
    ASSERT_TRUE(support_test_ping(held));
    EXPECT_EQ(cutter.connections(), 1u);

    // A cut resets the open connection, and a new one during it. 1 s rather than less: the new
    // connection must be accepted before it ends, on however busy a machine.
    constexpr auto cut_for = 1s;
    const auto cut_at = SupportTestClock::now();
    cutter.cut(cut_for);
    EXPECT_EQ(cutter.connections(), 0u);
    const SupportTestRead reset = support_test_read(held, 1, 5s);
    EXPECT_TRUE(reset.ended);
    EXPECT_EQ(reset.error, ECONNRESET);
    ::close(held);

    const int during = connect_loopback(cutter.port());  // the kernel completes the handshake
    ASSERT_GE(during, 0);
    const bool sent = support_test_send_ping(during);  // fails if the reset came first
    const int send_error = sent ? 0 : errno;
    const SupportTestRead refused = support_test_read(during, 7, 5s);
    EXPECT_EQ(refused.bytes, "");
    EXPECT_TRUE(refused.ended) << "no reset within 5 s";
    EXPECT_TRUE(refused.error == ECONNRESET || send_error == ECONNRESET || send_error == EPIPE)
        << "read error " << refused.error << ", send error " << send_error;
    ::close(during);

    // Once it ends, connections go through again (and not before).
    int after = -1;
    const auto give_up = SupportTestClock::now() + 10s;
    bool works = false;
    while (!works && SupportTestClock::now() < give_up) {
        if (after >= 0) ::close(after);
        after = connect_loopback(cutter.port());
        works = after >= 0 && support_test_ping(after, 2s);
        if (!works) std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(works) << "nothing went through within 10 s of the cut";
    EXPECT_GE(SupportTestClock::now() - cut_at, cut_for);

    // A stall moves nothing, either way, and closes nothing: a PING sent during it, on a connection
    // made before or during it, is answered once it ends.
    constexpr auto stall_for = 300ms;
    const auto stall_at = SupportTestClock::now();
    cutter.stall(stall_for);
    ASSERT_TRUE(support_test_send_ping(after));
    const int late = connect_loopback(cutter.port());
    ASSERT_GE(late, 0);
    ASSERT_TRUE(support_test_send_ping(late));
    EXPECT_EQ(support_test_read(after, 7, stall_for + 5s).bytes, "+PONG\r\n");
    EXPECT_GE(SupportTestClock::now() - stall_at, stall_for);
    EXPECT_EQ(support_test_read(late, 7, 5s).bytes, "+PONG\r\n");
    EXPECT_EQ(cutter.connections(), 2u);

    // Four PINGs went through (6 bytes each), four PONGs came back (7 each); the cut ones, none.
    EXPECT_EQ(cutter.bytes_to_target(), 4u * 6);
    EXPECT_TRUE(eventually([&] { return cutter.bytes_from_target() == 4u * 7; }))  // counted just after the send
        << cutter.bytes_from_target();
    ::close(after);
    ::close(late);
    EXPECT_TRUE(eventually([&] { return cutter.connections() == 0; }));
}

}  // namespace
}  // namespace cspd::test
