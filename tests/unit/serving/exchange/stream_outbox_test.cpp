#include "serving/exchange/stream_outbox.hpp"

#include <csp/csp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace cspd {
namespace {

TEST(StreamOutbox, FramesChunksAndEndsWithTheLastChunk) {
    StreamOutbox out(StreamOutbox::Framing::chunked);
    EXPECT_TRUE(out.write("hello", false).poke);
    EXPECT_FALSE(out.write(std::string(26, 'x'), false).poke);  // the loop was told already
    EXPECT_EQ(out.write("", false).code, 0);                     // nothing: no empty chunk, which would end the body
    EXPECT_EQ(out.end().code, 0);
    EXPECT_EQ(out.take(), "5\r\nhello\r\n1a\r\n" + std::string(26, 'x') + "\r\n0\r\n\r\n");
    EXPECT_EQ(out.write("late", false).code, -1);
    EXPECT_EQ(out.end().code, -1);
}

TEST(StreamOutbox, KeepsAWebSocketFrameWholeAndEndsWithTheCloseFrame) {
    using namespace std::string_view_literals;
    StreamOutbox out(StreamOutbox::Framing::raw);
    EXPECT_TRUE(out.write_parts("\x81\x02"sv, "hi", false).poke);
    EXPECT_EQ(out.write_parts("\x81\x00"sv, "", false).code, 0);  // an empty message still has its head
    EXPECT_EQ(out.end_with("\x88\x00"sv).code, 0);
    EXPECT_EQ(out.take(), "\x81\x02hi\x81\x00\x88\x00"sv);
    EXPECT_EQ(out.write_parts("\x81\x01"sv, "x", false).code, -1);  // nothing after the close
    EXPECT_EQ(out.end_with("\x88\x00"sv).code, -1);
}

TEST(StreamOutbox, WritesRawBytesForHttp10AndNothingForHead) {
    StreamOutbox raw(StreamOutbox::Framing::raw);
    raw.write("abc", false);
    raw.end();
    EXPECT_EQ(raw.take(), "abc");
    StreamOutbox head(StreamOutbox::Framing::none);
    EXPECT_EQ(head.write("abc", false).code, 0);
    head.end();
    EXPECT_EQ(head.take(), "");
}

TEST(StreamOutbox, FramesServerSentEventsLineByLine) {
    StreamOutbox out(StreamOutbox::Framing::raw);
    out.event("tick", "a\nb\r\nc\rd", false);
    out.event("", "", false);
    EXPECT_EQ(out.take(), "event: tick\ndata: a\ndata: b\ndata: c\ndata: d\n\ndata: \n\n");
    StreamOutbox chunked(StreamOutbox::Framing::chunked);
    chunked.event("e", "x", false);
    EXPECT_EQ(chunked.take(), "12\r\nevent: e\ndata: x\n\n\r\n");  // 18 bytes: the size counts what is framed
}

TEST(StreamOutbox, SaysAgainPastTheHighWaterMarkAndRoomBelowHalfOfIt) {
    StreamOutbox out(StreamOutbox::Framing::raw);
    const std::string block(64 * 1024, 'b');
    int code = 0, writes = 0;
    while ((code = out.write(block, false).code) == 0) ++writes;
    EXPECT_EQ(code, CSP_AGAIN);  // taken all the same
    EXPECT_EQ(writes, 4);        // 4 x 64 KiB reach the mark; the 5th passes it
    const std::size_t taken = out.take().size();
    EXPECT_EQ(taken, 5 * block.size());
    EXPECT_FALSE(out.set_backlog(taken));                              // the socket holds it all: no room
    EXPECT_FALSE(out.set_backlog(StreamOutbox::kHighWater / 2 + 1));   // not below half yet
    EXPECT_TRUE(out.set_backlog(StreamOutbox::kHighWater / 2));        // room: the writer hears it once
    EXPECT_FALSE(out.set_backlog(0));
}

TEST(StreamOutbox, RefusesALoopWriterPastTheHardLimit) {
    StreamOutbox out(StreamOutbox::Framing::raw);
    const std::string block(64 * 1024, 'b');
    StreamOutbox::Result r{};
    std::size_t written = 0;
    while ((r = out.write(block, false)).code >= 0) written += block.size();
    EXPECT_TRUE(r.overflow);
    EXPECT_LE(written, StreamOutbox::kHardLimit);
    EXPECT_GT(written + block.size(), StreamOutbox::kHardLimit);
}

TEST(StreamOutbox, MakesAWriterOffTheLoopWaitForRoom) {
    StreamOutbox out(StreamOutbox::Framing::raw);
    out.write(std::string(StreamOutbox::kHighWater, 'x'), false);  // full
    std::atomic<bool> wrote{false};
    std::thread writer([&] {
        EXPECT_EQ(out.write("more", true).code, 0);  // never CSP_AGAIN off the loop
        wrote = true;
    });
    out.take();
    out.set_backlog(StreamOutbox::kHighWater);  // taken, but still in the socket: no room yet
    EXPECT_FALSE(wrote);
    out.set_backlog(0);
    writer.join();
    EXPECT_TRUE(wrote);
    EXPECT_EQ(out.take(), "more");
}

TEST(StreamOutbox, WakesAWaitingWriterWhenClosed) {
    StreamOutbox out(StreamOutbox::Framing::raw);
    out.write(std::string(StreamOutbox::kHighWater, 'x'), false);
    std::thread writer([&] { EXPECT_EQ(out.write("more", true).code, -1); });
    out.close();
    writer.join();
}

}  // namespace
}  // namespace cspd
