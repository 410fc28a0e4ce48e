// The plain transport over a real socketpair: each read and write says what moved and why it
// stopped (would block, the end, a failure), waits call their user once and hold it alive,
// and close() ends them without a call.
#include "serving/transport/transport.hpp"

#include "common/unique_fd.hpp"
#include "temp_dir.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

namespace cspd {
namespace {

struct CountingUser final : TransportUser, std::enable_shared_from_this<CountingUser> {
    int readable = 0;
    int writable = 0;
    void on_readable() override { ++readable; }
    void on_writable() override { ++writable; }
    std::shared_ptr<TransportUser> share() override { return shared_from_this(); }
};

class TransportTest : public ::testing::Test {
protected:
    TransportTest() {
        int fds[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
        peer.reset(fds[1]);
        int small = 4096;  // a small send buffer, so that "the socket is full" comes quickly
        ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        transport = std::make_unique<Transport>(reads, fds[0], false);
    }

    void peer_sends(const std::string& bytes) {
        ASSERT_EQ(::write(peer.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    }
    std::string drain_peer() {
        std::string got;
        char chunk[65536];
        for (ssize_t n; (n = ::recv(peer.get(), chunk, sizeof chunk, MSG_DONTWAIT)) > 0;)
            got.append(chunk, static_cast<std::size_t>(n));
        return got;
    }
    /// Writes until the socket is full; what it took.
    std::size_t fill() {
        const std::string block(64 * 1024, 'x');
        std::size_t taken = 0;
        for (;;) {
            const Transport::Moved moved = transport->write(block);
            taken += moved.bytes;
            if (moved.io != Transport::Io::done) return taken;
        }
    }

    boost::asio::io_context io;
    ReadWatch reads{io};
    UniqueFd peer;
    std::unique_ptr<Transport> transport;
};

TEST_F(TransportTest, ReadsWhatCameThenSaysItWouldBlockThenSeesTheEnd) {
    peer_sends("abc");
    char into[16];
    Transport::Moved got = transport->read(into, sizeof into);
    EXPECT_EQ(got.io, Transport::Io::done);
    ASSERT_EQ(got.bytes, 3u);
    EXPECT_EQ(std::string(into, 3), "abc");
    EXPECT_EQ(transport->read(into, sizeof into).io, Transport::Io::would_block);
    peer.reset();
    got = transport->read(into, sizeof into);
    EXPECT_EQ(got.io, Transport::Io::closed);
    EXPECT_EQ(got.bytes, 0u);
}

TEST_F(TransportTest, AFullSocketSaysHowMuchItTookBeforeItWouldBlock) {
    const std::string big(1 << 20, 'b');
    const Transport::Moved moved = transport->write(big);
    EXPECT_EQ(moved.io, Transport::Io::would_block);
    EXPECT_GT(moved.bytes, 0u);
    EXPECT_LT(moved.bytes, big.size());
    EXPECT_EQ(drain_peer().size(), moved.bytes);
}

TEST_F(TransportTest, AWriteToAPeerThatWentAwayFails) {
    peer.reset();
    EXPECT_EQ(transport->write("anything").io, Transport::Io::failed);
}

TEST_F(TransportTest, SendsAFileFromAnOffsetAndSaysWhenTheFileEnds) {
    test::TempDir dir;
    std::ofstream(dir / "f") << "abcdefgh";
    const UniqueFd file(::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC));
    Transport::Moved moved = transport->send_file(file.get(), 3, 4);
    EXPECT_EQ(moved.io, Transport::Io::done);
    EXPECT_EQ(moved.bytes, 4u);
    EXPECT_EQ(drain_peer(), "defg");
    moved = transport->send_file(file.get(), 8, 4);  // past its end: nothing moves
    EXPECT_EQ(moved.io, Transport::Io::done);
    EXPECT_EQ(moved.bytes, 0u);
}

TEST_F(TransportTest, AReadWaitCallsItsUserOnceAndHoldsItAliveMeanwhile) {
    auto busy = boost::asio::make_work_guard(io);
    auto user = std::make_shared<CountingUser>();
    const std::weak_ptr<CountingUser> seen = user;
    ASSERT_TRUE(transport->wait_readable(*user));
    user.reset();
    ASSERT_FALSE(seen.expired());  // the wait holds it
    io.poll();
    EXPECT_EQ(seen.lock()->readable, 0);
    peer_sends("x");
    io.run_one();
    EXPECT_EQ(seen.lock()->readable, 1);
    io.poll();
    EXPECT_EQ(seen.lock()->readable, 1);  // once per wait, though the byte is still unread
    ASSERT_TRUE(transport->wait_readable(*seen.lock()));  // between requests: no syscall, and it comes
    io.run_one();
    EXPECT_EQ(seen.lock()->readable, 2);
    transport->close();
    EXPECT_TRUE(seen.expired());  // closing lets it go
}

TEST_F(TransportTest, AWriteWaitHearsOfRoomOnceThePeerReads) {
    auto user = std::make_shared<CountingUser>();
    fill();
    ASSERT_TRUE(transport->wait_writable(*user));
    io.poll();
    EXPECT_EQ(user->writable, 0);  // still full
    drain_peer();
    io.run_one();
    EXPECT_EQ(user->writable, 1);
}

TEST_F(TransportTest, CloseEndsWaitsWithoutCallingTheirUser) {
    auto user = std::make_shared<CountingUser>();
    fill();
    ASSERT_TRUE(transport->wait_writable(*user));
    ASSERT_TRUE(transport->wait_readable(*user));
    peer_sends("x");  // both are ready now, but not yet heard of
    drain_peer();
    transport->close();
    EXPECT_FALSE(transport->is_open());
    io.poll();
    EXPECT_EQ(user->readable, 0);
    EXPECT_EQ(user->writable, 0);
    EXPECT_EQ(user.use_count(), 1);  // neither wait holds it any more
}

TEST_F(TransportTest, DiscardingInputDropsWhatCameUntilTheEnd) {
    peer_sends("left over");
    EXPECT_EQ(transport->discard_input(), Transport::Io::would_block);
    char into[4];
    EXPECT_EQ(transport->read(into, sizeof into).io, Transport::Io::would_block);  // nothing left
    peer_sends("more");
    EXPECT_EQ(transport->unread_bytes(), 4u);
    peer.reset();
    EXPECT_EQ(transport->discard_input(), Transport::Io::closed);
}

TEST_F(TransportTest, HalfClosedItStillReadsWhileThePeerSeesTheEnd) {
    ASSERT_TRUE(transport->shutdown_write());
    char one;
    EXPECT_EQ(::recv(peer.get(), &one, 1, MSG_DONTWAIT), 0);  // the peer sees our FIN
    peer_sends("late");
    char into[8];
    EXPECT_EQ(transport->read(into, sizeof into).bytes, 4u);
}

}  // namespace
}  // namespace cspd
