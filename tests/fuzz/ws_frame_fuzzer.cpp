// libFuzzer target: the WebSocket frame reader and the UTF-8 check alone (no sockets). Oracles:
// split-invariance -- the same bytes fed whole, in two pieces cut where the input says, and one byte
// at a time give the same events (data frames with their payloads, control frames) and the same
// verdict; control payloads never exceed 125 bytes and data frames carry what they announced; and
// the incremental UTF-8 check agrees with a plain decoder, whole and byte by byte; and inflating
// the bytes as a permessage-deflate message never keeps more than its limit.
#include "websocket/deflate.hpp"
#include "websocket/frame_reader.hpp"
#include "websocket/utf8_validator.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using cspd::ws::FrameReader;
using cspd::ws::Opcode;

struct Recorder final : FrameReader::Sink {
    std::string events;  // a transcript of everything the reader said
    std::uint64_t announced = 0, carried = 0;
    bool on_data_frame(Opcode opcode, bool first, bool fin, bool rsv1, std::uint64_t size) override {
        events += "D" + std::to_string(int(opcode)) + (first ? "f" : "c") + (fin ? "F" : "-") + (rsv1 ? "R" : "-") +
                  std::to_string(size) + ":";
        announced = size;
        carried = 0;
        return true;
    }
    bool on_data(std::string_view payload) override {
        events.append(payload);
        carried += payload.size();
        if (carried > announced) std::abort();
        return true;
    }
    bool on_data_frame_end(bool fin) override {
        if (carried != announced) std::abort();
        events += fin ? "|E" : "|e";
        return true;
    }
    bool on_control(Opcode opcode, std::string_view payload) override {
        if (payload.size() > cspd::ws::kMaxControlPayload) std::abort();
        events += "C" + std::to_string(int(opcode)) + ":" + std::string(payload) + "|";
        return true;
    }
};

std::string run(const std::uint8_t* data, std::size_t size, bool allow_rsv1, const std::vector<std::size_t>& cuts) {
    std::vector<char> bytes(data, data + size);  // unmasked in place: a copy per run
    FrameReader reader(allow_rsv1);
    Recorder sink;
    std::size_t at = 0;
    FrameReader::Error error = FrameReader::Error::none;
    for (std::size_t i = 0; i <= cuts.size() && error == FrameReader::Error::none; ++i) {
        const std::size_t end = i < cuts.size() ? cuts[i] : size;
        const FrameReader::Result result = reader.feed(bytes.data() + at, end - at, sink);
        error = result.error;
        at = end;
    }
    return sink.events + "#" + std::to_string(int(error));
}

/// A plain decoder: RFC 3629's table, one code point at a time.
bool reference_utf8(const std::uint8_t* p, std::size_t n) {
    std::size_t i = 0;
    while (i < n) {
        const std::uint8_t b = p[i];
        std::uint32_t cp;
        std::size_t len;
        if (b < 0x80) { ++i; continue; }
        if ((b & 0xE0) == 0xC0) cp = b & 0x1F, len = 2;
        else if ((b & 0xF0) == 0xE0) cp = b & 0x0F, len = 3;
        else if ((b & 0xF8) == 0xF0) cp = b & 0x07, len = 4;
        else return false;
        if (i + len > n) return false;
        for (std::size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool allow_rsv1 = data[0] & 1;
    const std::size_t cut = size > 1 ? data[1] % size : 0;
    ++data, --size;
    const std::string whole = run(data, size, allow_rsv1, {});
    if (run(data, size, allow_rsv1, {std::min(cut, size)}) != whole) std::abort();
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < size; ++i) every.push_back(i);
    if (run(data, size, allow_rsv1, every) != whole) std::abort();

    const bool valid = reference_utf8(data, size);
    if (cspd::ws::Utf8Validator::valid({reinterpret_cast<const char*>(data), size}) != valid) std::abort();
    cspd::ws::Utf8Validator piecewise;
    for (std::size_t i = 0; i < size; ++i) piecewise.feed({reinterpret_cast<const char*>(data) + i, 1});
    if (piecewise.complete() != valid) std::abort();

    std::string inflated;
    constexpr std::size_t kLimit = 64 * 1024;
    cspd::ws::inflate_message({reinterpret_cast<const char*>(data), size}, inflated, kLimit);
    if (inflated.size() > kLimit) std::abort();
    return 0;
}
