#include "tls/key_client.hpp"

#include "common/fd_passing.hpp"
#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>

namespace cspd {
namespace {
std::atomic<int> channel{-1};
std::mutex channel_sending;

struct ThreadConnection {
    UniqueFd fd;
    std::chrono::steady_clock::time_point quiet_until{};
};
thread_local ThreadConnection connection;
thread_local bool sign_failed = false;

bool open_connection() {
    const int fd = channel.load();
    if (fd < 0) return false;
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return false;
    UniqueFd ours(pair[0]), theirs(pair[1]);
    {
        std::lock_guard lock(channel_sending);
        if (!send_descriptor(fd, theirs.get())) return false;
    }
    connection.fd = std::move(ours);
    return true;
}
}  // namespace

bool KeyClient::take_sign_failure() { return std::exchange(sign_failed, false); }

void KeyClient::note_sign_failure() { sign_failed = true; }

void KeyClient::set_channel(int fd) {
    if (fd >= 0) ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // not for the processes a worker starts
    channel.store(fd);
}

bool KeyClient::has_channel() { return channel.load() >= 0; }

std::optional<key_protocol::Frame> KeyClient::ask(key_protocol::Op op, std::uint64_t id, std::string_view payload,
                                                  int timeout_ms) {
    const auto now = std::chrono::steady_clock::now();
    if (now < connection.quiet_until) return std::nullopt;
    if (!connection.fd && !open_connection()) {
        connection.quiet_until = now + std::chrono::seconds(1);
        return std::nullopt;
    }
    std::optional<key_protocol::Frame> answer =
        key_protocol::ask(connection.fd.get(), key_protocol::encode(static_cast<std::uint8_t>(op), id, payload), timeout_ms);
    if (!answer) {
        // An answer that comes late would be taken for the next one's: this connection is done.
        connection.fd.reset();
        connection.quiet_until = now + std::chrono::seconds(1);
    }
    return answer;
}

}  // namespace cspd
