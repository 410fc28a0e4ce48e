// The output queue over a transport on a real socketpair: what a connection has yet to write
// leaves in order, bytes and files alike, and a full socket or a gone peer is reported, not hidden.
#include "serving/transport/output_queue.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

namespace cspd {
namespace {

class OutputQueueTest : public ::testing::Test {
protected:
    OutputQueueTest() {
        int fds[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
        peer.reset(fds[1]);
        int small = 4096;  // a small send buffer, so that "the socket is full" comes quickly
        ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        ours = std::make_unique<Transport>(reads, fds[0], false);
    }

    /// Everything the peer can read now.
    std::string drain_peer() {
        std::string got;
        char chunk[65536];
        for (;;) {
            const ssize_t n = ::recv(peer.get(), chunk, sizeof chunk, MSG_DONTWAIT);
            if (n <= 0) break;
            got.append(chunk, static_cast<std::size_t>(n));
        }
        return got;
    }

    StaticFiles::File file_with(const std::string& bytes) {
        const auto path = dir / ("f" + std::to_string(files++));
        std::ofstream(path) << bytes;
        StaticFiles::File file;
        file.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        file.size = bytes.size();
        return file;
    }

    test::TempDir dir;
    int files = 0;
    boost::asio::io_context io;
    ReadWatch reads{io};
    std::unique_ptr<Transport> ours;
    UniqueFd peer;
    OutputQueue queue;
};

TEST_F(OutputQueueTest, SendsAtOnceWhenTheSocketTakesIt) {
    const auto written = queue.send(*ours, "HTTP/1.1 200 OK\r\n\r\n");
    EXPECT_EQ(written.progress, OutputQueue::Progress::done);
    EXPECT_EQ(written.bytes, 19u);
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(drain_peer(), "HTTP/1.1 200 OK\r\n\r\n");
}

TEST_F(OutputQueueTest, KeepsWhatAFullSocketDoesNotTakeAndSendsItInOrderLater) {
    std::string big(1 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    auto written = queue.send(*ours, big);
    ASSERT_EQ(written.progress, OutputQueue::Progress::would_block);
    EXPECT_LT(written.bytes, big.size());
    EXPECT_EQ(queue.size(), big.size() - written.bytes);
    // Later answers queue behind what waits, even when the socket has room by then.
    std::string got = drain_peer();
    written = queue.send(*ours, "|tail");
    while (written.progress == OutputQueue::Progress::would_block) {
        got += drain_peer();
        written = queue.write_to(*ours);
    }
    EXPECT_EQ(written.progress, OutputQueue::Progress::done);
    got += drain_peer();
    EXPECT_EQ(got, big + "|tail");
    EXPECT_TRUE(queue.empty());
}

TEST_F(OutputQueueTest, SendsFilesFromWhereTheyAreBetweenTheBytesAroundThem) {
    std::string body(300 * 1024, 'f');
    queue.append_file("HEAD1\r\n\r\n", file_with(body));
    EXPECT_EQ(queue.size(), 9 + body.size());
    auto written = queue.send(*ours, "NEXT");
    std::string got;
    while (written.progress == OutputQueue::Progress::would_block) {
        got += drain_peer();
        written = queue.write_to(*ours);
    }
    ASSERT_EQ(written.progress, OutputQueue::Progress::done);
    got += drain_peer();
    EXPECT_EQ(got, "HEAD1\r\n\r\n" + body + "NEXT");
}

TEST_F(OutputQueueTest, SaysSoWhenAFileShrinksWhileBeingSent) {
    StaticFiles::File file = file_with("only ten b");
    file.size = 1000;  // promised more than the file holds
    queue.append_file("H", std::move(file));
    OutputQueue::Written written = queue.write_to(*ours);
    while (written.progress == OutputQueue::Progress::would_block) {
        drain_peer();
        written = queue.write_to(*ours);
    }
    EXPECT_EQ(written.progress, OutputQueue::Progress::file_shrank);
}

TEST_F(OutputQueueTest, ReportsAPeerThatWentAway) {
    peer.reset();
    EXPECT_EQ(queue.send(*ours, "anything").progress, OutputQueue::Progress::failed);
}

}  // namespace
}  // namespace cspd
