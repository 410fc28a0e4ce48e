// What RFC 6455 §5.2 says a frame begins with, the opcodes, and the close codes a peer may
// send (§7.4): shared by the reader, the session and everything that writes frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cspd::ws {

enum class Opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

inline bool is_control(Opcode op) { return (static_cast<std::uint8_t>(op) & 0x8) != 0; }

/// Close codes the host sends (RFC 6455 §7.4.1).
enum CloseCode : std::uint16_t {
    kNormal = 1000,
    kGoingAway = 1001,
    kProtocolError = 1002,
    kUnsupportedData = 1003,
    kNoStatus = 1005,    ///< never on the wire: the close frame had no code
    kAbnormal = 1006,    ///< never on the wire: the connection ended without a close frame
    kInvalidPayload = 1007,
    kPolicy = 1008,
    kTooBig = 1009,
    kInternalError = 1011,
    kServiceRestart = 1012,  ///< IANA's registry: reconnect (and reload: messages were lost)
};

/// A code a peer (or a handler) may put in a close frame: 1000-1003, 1007-1014 (RFC 6455's and
/// IANA's registry since: service restart, try again later, bad gateway), 3000-4999.
inline bool is_sendable_close_code(unsigned code) {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

/// The most bytes a frame head takes (2 + 8 of length + 4 of mask).
constexpr std::size_t kMaxHeadBytes = 14;
/// Control frames carry at most this much (§5.5).
constexpr std::size_t kMaxControlPayload = 125;

/// Appends the head of an unmasked frame (the server's) carrying `size` bytes.
inline void append_frame_head(std::string& out, Opcode op, std::uint64_t size, bool fin = true, bool rsv1 = false) {
    char head[10];
    head[0] = static_cast<char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | static_cast<std::uint8_t>(op));
    std::size_t n = 2;
    if (size < 126) {
        head[1] = static_cast<char>(size);
    } else if (size <= 0xFFFF) {
        head[1] = 126;
        head[2] = static_cast<char>(size >> 8);
        head[3] = static_cast<char>(size);
        n = 4;
    } else {
        head[1] = 127;
        for (int i = 0; i < 8; ++i) head[2 + i] = static_cast<char>(size >> (56 - 8 * i));
        n = 10;
    }
    out.append(head, n);
}

/// The bytes of the head append_frame_head writes for `size`.
inline std::size_t frame_head_size(std::uint64_t size) { return size < 126 ? 2 : size <= 0xFFFF ? 4 : 10; }

/// Appends a whole close frame: `code` (none when 0) and `reason` (cut to fit 125 bytes).
inline void append_close_frame(std::string& out, unsigned code, std::string_view reason = {}) {
    if (code == 0) {
        append_frame_head(out, Opcode::close, 0);
        return;
    }
    if (reason.size() > kMaxControlPayload - 2) reason = reason.substr(0, kMaxControlPayload - 2);
    append_frame_head(out, Opcode::close, 2 + reason.size());
    out.push_back(static_cast<char>(code >> 8));
    out.push_back(static_cast<char>(code & 0xFF));
    out.append(reason);
}

}  // namespace cspd::ws
