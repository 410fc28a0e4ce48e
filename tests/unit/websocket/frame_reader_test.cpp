#include "websocket/frame_reader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cspd::ws {
namespace {

/// A masked client frame.
std::string frame(std::uint8_t first_byte, std::string_view payload, std::string mask = "\x11\x22\x33\x44") {
    std::string out(1, char(first_byte));
    const std::size_t n = payload.size();
    if (n < 126) {
        out += char(0x80 | n);
    } else if (n < 65536) {
        out += char(0x80 | 126);
        out += char(n >> 8), out += char(n & 0xFF);
    } else {
        out += char(0x80 | 127);
        for (int i = 7; i >= 0; --i) out += char((std::uint64_t(n) >> (8 * i)) & 0xFF);
    }
    out += mask;
    for (std::size_t i = 0; i < n; ++i) out += char(payload[i] ^ mask[i % 4]);
    return out;
}

struct Events final : FrameReader::Sink {
    std::vector<std::string> seen;
    std::string data;
    bool stop_on_control = false;
    bool on_data_frame(Opcode opcode, bool first, bool fin, bool, std::uint64_t size) override {
        seen.push_back("frame " + std::to_string(int(opcode)) + (first ? " first" : " cont") + (fin ? " fin " : " ") +
                       std::to_string(size));
        return true;
    }
    bool on_data(std::string_view payload) override {
        data.append(payload);
        return true;
    }
    bool on_data_frame_end(bool fin) override {
        seen.push_back(fin ? "message " + data : "part");
        if (fin) data.clear();
        return true;
    }
    bool on_control(Opcode opcode, std::string_view payload) override {
        seen.push_back("control " + std::to_string(int(opcode)) + " " + std::string(payload));
        return !stop_on_control;
    }
};

FrameReader::Result feed(FrameReader& reader, std::string bytes, Events& events) {
    return reader.feed(bytes.data(), bytes.size(), events);
}

TEST(FrameReader, UnmasksAWholeTextFrame) {
    FrameReader reader;
    Events events;
    const auto result = feed(reader, frame(0x81, "Hello"), events);
    EXPECT_EQ(result.error, FrameReader::Error::none);
    EXPECT_EQ(result.consumed, 11u);
    EXPECT_EQ(events.seen, (std::vector<std::string>{"frame 1 first fin 5", "message Hello"}));
}

TEST(FrameReader, GivesTheSameEventsForBytesInAnyPieces) {
    const std::string bytes = frame(0x01, "frag") + frame(0x89, "ping!") + frame(0x80, std::string(300, 'x')) +
                              frame(0x82, std::string(70000, 'b')) + frame(0x81, "");
    FrameReader whole_reader;
    Events whole;
    ASSERT_EQ(feed(whole_reader, bytes, whole).error, FrameReader::Error::none);
    FrameReader byte_reader;
    Events by_byte;
    std::string copy = bytes;
    for (std::size_t i = 0; i < copy.size(); ++i) ASSERT_EQ(byte_reader.feed(&copy[i], 1, by_byte).error, FrameReader::Error::none);
    EXPECT_EQ(whole.seen, by_byte.seen);
    ASSERT_EQ(whole.seen.size(), 9u);
    EXPECT_EQ(whole.seen[2], "control 9 ping!");
    EXPECT_EQ(whole.seen[4], "message frag" + std::string(300, 'x'));
    EXPECT_EQ(whole.seen[5], "frame 2 first fin 70000");
    EXPECT_EQ(whole.seen[8], "message ");  // an empty frame at the very end of the bytes is whole too
}

TEST(FrameReader, RefusesWhatSection5Forbids) {
    const struct {
        std::string bytes;
        FrameReader::Error error;
    } cases[] = {
        {std::string("\x81\x05Hello", 7), FrameReader::Error::unmasked},
        {frame(0xC1, "x"), FrameReader::Error::reserved_bits},
        {frame(0xA1, "x"), FrameReader::Error::reserved_bits},
        {frame(0x83, "x"), FrameReader::Error::unknown_opcode},
        {frame(0x8B, "x"), FrameReader::Error::unknown_opcode},
        {frame(0x09, "x"), FrameReader::Error::fragmented_control},
        {frame(0x89, std::string(126, 'p')), FrameReader::Error::control_too_long},
        {frame(0x80, "x"), FrameReader::Error::unexpected_continuation},
        {frame(0x01, "a") + frame(0x81, "b"), FrameReader::Error::expected_continuation},
        {std::string("\x82\xFF\x80\0\0\0\0\0\0\0\1\2\3\4", 14), FrameReader::Error::length_too_large},
    };
    for (const auto& c : cases) {
        FrameReader reader;
        Events events;
        EXPECT_EQ(feed(reader, c.bytes, events).error, c.error) << FrameReader::describe(c.error);
        // And it stays failed.
        EXPECT_EQ(feed(reader, frame(0x81, "ok"), events).error, c.error);
    }
}

TEST(FrameReader, LetsRsv1ThroughOnAFirstDataFrameOnlyWhenAnExtensionTookIt) {
    FrameReader without;
    Events events;
    EXPECT_EQ(feed(without, frame(0xC1, "x"), events).error, FrameReader::Error::reserved_bits);
    FrameReader with(true);
    EXPECT_EQ(feed(with, frame(0x41, "x") + frame(0x80, "y"), events).error, FrameReader::Error::none);
    FrameReader on_continuation(true);
    EXPECT_EQ(feed(on_continuation, frame(0x01, "x") + frame(0xC0, "y"), events).error,
              FrameReader::Error::reserved_bits);
    FrameReader on_control(true);
    EXPECT_EQ(feed(on_control, frame(0xC9, ""), events).error, FrameReader::Error::reserved_bits);
}

TEST(FrameReader, StopsWhereTheSinkSaysAndTellsHowFarItRead) {
    FrameReader reader;
    Events events;
    events.stop_on_control = true;
    const std::string bytes = frame(0x88, "\x03\xe8") + frame(0x81, "after");
    const auto result = feed(reader, bytes, events);
    EXPECT_TRUE(result.stopped);
    EXPECT_EQ(result.consumed, 8u);
    EXPECT_EQ(events.seen.size(), 1u);
}

}  // namespace
}  // namespace cspd::ws
