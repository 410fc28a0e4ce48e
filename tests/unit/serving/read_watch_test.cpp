// ReadWatch: level-triggered, one call per watch(), silent (and out of the set) when readable
// unwanted, holds its readers until forget(), and lets the io_context's run() end when empty.
#include "serving/read_watch.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>

namespace cspd {
namespace {

struct CountingReader final : ReadWatch::Reader {
    int calls = 0;
    void on_readable() override { ++calls; }
};

struct SocketPair {
    int ends[2] = {-1, -1};
    SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, ends), 0); }
    ~SocketPair() {
        for (int fd : ends)
            if (fd >= 0) ::close(fd);
    }
    void send_byte() const { ASSERT_EQ(::write(ends[1], "x", 1), 1); }
};

TEST(ReadWatch, CallsOncePerWatchAndAgainWhileBytesRemainUnread) {
    boost::asio::io_context io;
    auto busy = boost::asio::make_work_guard(io);  // as a loop's acceptor and tick keep it
    ReadWatch watch(io);
    SocketPair pair;
    auto reader = std::make_shared<CountingReader>();
    ASSERT_TRUE(watch.watch(pair.ends[0], reader));
    io.poll();
    EXPECT_EQ(reader->calls, 0);  // nothing to read yet

    pair.send_byte();
    io.run_one();
    EXPECT_EQ(reader->calls, 1);
    // Still in the set: wanting the next readiness again costs nothing, and it comes.
    ASSERT_TRUE(watch.rewatch(pair.ends[0]));
    io.run_one();
    EXPECT_EQ(reader->calls, 2);
    // The byte is still unread, but the wish was used up: no further call...
    io.poll();
    io.poll();
    EXPECT_EQ(reader->calls, 2);
    // ...until it watches again: level-triggered, the unread byte is heard of at once. (It left
    // the set when it fired unwanted, so rewatch() cannot do it: watch() is needed.)
    EXPECT_FALSE(watch.rewatch(pair.ends[0]));
    ASSERT_TRUE(watch.watch(pair.ends[0], reader));
    io.run_one();
    EXPECT_EQ(reader->calls, 3);
    watch.forget(pair.ends[0]);
}

TEST(ReadWatch, HoldsItsReaderUntilForgetAndThenLetsRunEnd) {
    boost::asio::io_context io;
    ReadWatch watch(io);
    SocketPair pair;
    std::weak_ptr<CountingReader> gone;
    {
        auto reader = std::make_shared<CountingReader>();
        gone = reader;
        ASSERT_TRUE(watch.watch(pair.ends[0], reader));
    }
    EXPECT_FALSE(gone.expired()) << "the watch keeps its reader alive";
    watch.forget(pair.ends[0]);
    EXPECT_TRUE(gone.expired());
    pair.send_byte();
    // Nothing is watched, so nothing is waited for: run() ends for want of work, not by the clock.
    io.run_for(std::chrono::seconds(2));
    EXPECT_TRUE(io.stopped()) << "the set's wait still keeps the io_context busy";
}

// The last watched descriptor is forgotten (its wait is cancelled, the abort not yet run) and
// another is watched before the abort runs: that one must still be heard of.
TEST(ReadWatch, AWatchBetweenTheLastForgetAndItsCancelledWaitIsHeard) {
    boost::asio::io_context io;
    auto busy = boost::asio::make_work_guard(io);
    ReadWatch watch(io);
    SocketPair first, second;
    auto a = std::make_shared<CountingReader>(), b = std::make_shared<CountingReader>();
    ASSERT_TRUE(watch.watch(first.ends[0], a));
    watch.forget(first.ends[0]);
    ASSERT_TRUE(watch.watch(second.ends[0], b));
    second.send_byte();
    for (int i = 0; i < 3 && b->calls == 0; ++i) io.run_one_for(std::chrono::milliseconds(300));
    EXPECT_EQ(b->calls, 1);
    EXPECT_EQ(a->calls, 0);
    watch.forget(second.ends[0]);
}

// A connection that closes from its own on_readable forgets itself, and its last reference may
// go with it: it must stay alive until that call returns (ASan sees the use after free if not).
struct ClosingReader final : ReadWatch::Reader {
    ReadWatch* watch = nullptr;
    int fd = -1;
    std::shared_ptr<ClosingReader>* owner = nullptr;  // the only other reference
    std::weak_ptr<ClosingReader> self;
    int* calls = nullptr;
    bool* alive_after_forget = nullptr;
    void on_readable() override {
        owner->reset();     // as a closing connection's pending operations let go of it
        watch->forget(fd);  // the watch's reference was the last
        *alive_after_forget = !self.expired();
        ++*calls;           // touches this object after its last reference was given up
    }
};

TEST(ReadWatch, AReaderThatForgetsItselfInItsCallLivesUntilTheCallReturns) {
    boost::asio::io_context io;
    auto busy = boost::asio::make_work_guard(io);
    ReadWatch watch(io);
    SocketPair pair;
    int calls = 0;
    bool alive_after_forget = false;
    auto owner = std::make_shared<ClosingReader>();
    std::weak_ptr<ClosingReader> gone = owner;
    ClosingReader* raw = owner.get();
    raw->watch = &watch;
    raw->fd = pair.ends[0];
    raw->owner = &owner;
    raw->self = owner;
    raw->calls = &calls;
    raw->alive_after_forget = &alive_after_forget;
    ASSERT_TRUE(watch.watch(pair.ends[0], owner));
    pair.send_byte();
    io.run_one();
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(alive_after_forget);
    EXPECT_TRUE(gone.expired()) << "let go once the dispatch ended";
}

TEST(ReadWatch, ReportsTheClientClosing) {
    boost::asio::io_context io;
    ReadWatch watch(io);
    SocketPair pair;
    auto reader = std::make_shared<CountingReader>();
    ASSERT_TRUE(watch.watch(pair.ends[0], reader));
    ::close(pair.ends[1]);
    pair.ends[1] = -1;
    io.run_one();
    EXPECT_EQ(reader->calls, 1);  // EOF is readable: the reader's recv sees it
    watch.forget(pair.ends[0]);
}

TEST(ReadWatch, RefusesADescriptorTheKernelCannotWatch) {
    boost::asio::io_context io;
    ReadWatch watch(io);
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    EXPECT_FALSE(watch.watch(pipe_fds[0], std::make_shared<CountingReader>()));  // closed: EBADF
}

}  // namespace
}  // namespace cspd
