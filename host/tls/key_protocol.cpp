#include "tls/key_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace cspd::key_protocol {
namespace {
constexpr std::size_t kHeader = 4 + 1 + 8;

void put(std::string& out, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
}

std::uint64_t get(std::string_view in, std::size_t at, int bytes) {
    std::uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= std::uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
    return value;
}
}  // namespace

std::string encode(std::uint8_t kind, std::uint64_t id, std::string_view payload) {
    std::string out;
    out.reserve(kHeader + payload.size());
    put(out, 1 + 8 + payload.size(), 4);
    out.push_back(static_cast<char>(kind));
    put(out, id, 8);
    out.append(payload);
    return out;
}

std::optional<Frame> take(std::string& buffer, bool& bad) {
    bad = false;
    if (buffer.size() < 4) return std::nullopt;
    const std::size_t length = get(buffer, 0, 4);
    if (length < 9 || length > kMaxFrame) {
        bad = true;
        return std::nullopt;
    }
    if (buffer.size() < 4 + length) return std::nullopt;
    Frame frame;
    frame.kind = static_cast<std::uint8_t>(buffer[4]);
    frame.id = get(buffer, 5, 8);
    frame.payload.assign(buffer, kHeader, length - 9);
    buffer.erase(0, 4 + length);
    return frame;
}

std::optional<Frame> ask(int fd, std::string_view request, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    const auto left_ms = [&] {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        return static_cast<int>(std::max<std::int64_t>(0, left.count()));
    };
    std::size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            if (::poll(&p, 1, left_ms()) <= 0) return std::nullopt;
            continue;
        }
        return std::nullopt;
    }
    std::string buffer;
    for (;;) {
        bool bad = false;
        if (std::optional<Frame> frame = take(buffer, bad)) return frame;
        if (bad) return std::nullopt;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, left_ms());
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return std::nullopt;
        char chunk[16 * 1024];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n > 0) buffer.append(chunk, static_cast<std::size_t>(n));
        else if (n == 0 || (errno != EINTR && errno != EAGAIN)) return std::nullopt;
    }
}

}  // namespace cspd::key_protocol
