#include "process/key_process.hpp"

#include "common/clocks.hpp"
#include "common/fd_passing.hpp"
#include "process/config.hpp"
#include "process/privileges.hpp"
#include "tls/key_service.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {
namespace {
constexpr int kControlFd = 3;
constexpr int kLookEveryMs = 500;
// A thread's requests come one at a time: more than this waiting unread is not a worker.
constexpr std::size_t kMaxBuffered = key_protocol::kMaxFrame + 64;

enum class Kind { control, channel, client };
struct Peer {
    int fd;
    Kind kind;
    std::string input;
};

std::int64_t unix_now_s() { return unix_now_ms() / 1000; }

/// Writes all of `bytes` without waiting: a client that does not read its answers is cut off
/// rather than allowed to stall every worker's handshakes.
bool send_all(int fd, const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno == EINTR) continue;
        else return false;
    }
    return true;
}

class KeyProcess {
public:
    KeyProcess(const std::string& certs, bool self_signed, std::optional<KeyOutsider> outsider)
        : service_(certs, self_signed, std::move(outsider)) {
        peers_.push_back({kControlFd, Kind::control, {}});
    }

    int run() {
        service_.rescan(unix_now_s());
        std::int64_t next_look = unix_now_ms() + kLookEveryMs;
        std::vector<pollfd> waits;
        for (;;) {
            waits.clear();
            for (const Peer& peer : peers_) waits.push_back({peer.fd, POLLIN, 0});
            const int wait_ms = static_cast<int>(std::max<std::int64_t>(0, next_look - unix_now_ms()));
            const int ready = ::poll(waits.data(), waits.size(), wait_ms);
            if (ready < 0 && errno != EINTR) {
                spdlog::critical("key process: poll: {}", std::strerror(errno));
                return 1;
            }
            if (unix_now_ms() >= next_look) {
                service_.rescan(unix_now_s());
                next_look = unix_now_ms() + kLookEveryMs;
            }
            if (ready <= 0) continue;
            std::vector<int> gone;
            const std::size_t count = waits.size();  // peers_ may grow below
            for (std::size_t i = 0; i < count; ++i) {
                if (!waits[i].revents) continue;
                if (!serve(i)) {
                    if (peers_[i].kind == Kind::control) return 0;  // the master is gone
                    gone.push_back(peers_[i].fd);
                }
            }
            for (int fd : gone) forget(fd);
        }
    }

private:
    /// False when the peer is done with.
    bool serve(std::size_t index) {
        Peer& peer = peers_[index];
        if (peer.kind != Kind::client) {
            // The control socket brings channels; a channel brings a thread's connection.
            const int fd = receive_descriptor(peer.fd);
            if (fd == -1) return false;
            if (fd >= 0) peers_.push_back({fd, peer.kind == Kind::control ? Kind::channel : Kind::client, {}});
            return true;
        }
        char chunk[16 * 1024];
        const ssize_t n = ::recv(peer.fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return false;
        if (n < 0) return true;
        std::string& input = peers_[index].input;
        input.append(chunk, static_cast<std::size_t>(n));
        for (;;) {
            bool bad = false;
            std::optional<key_protocol::Frame> request = key_protocol::take(input, bad);
            if (bad || input.size() > kMaxBuffered) return false;
            if (!request) return true;
            if (!send_all(peers_[index].fd, service_.answer(*request))) return false;
        }
    }

    void forget(int fd) {
        for (auto it = peers_.begin(); it != peers_.end(); ++it)
            if (it->fd == fd) {
                ::close(fd);
                peers_.erase(it);
                return;
            }
    }

    KeyService service_;
    std::vector<Peer> peers_;
};
}  // namespace

int run_key_process(int argc, char** argv) {
    // Nobody but root may read this process's memory or attach to it, and it leaves no core.
    ::prctl(PR_SET_DUMPABLE, 0);
    // A terminal's ^C or a stop reaches the whole group: this process ends when its master does.
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    ::signal(SIGUSR1, SIG_IGN);
    std::string certs, level = "info";
    Config as_run;  // --user: whose workers must not be able to read a key
    bool self_signed = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--certs" && i + 1 < argc) certs = argv[++i];
        else if (arg == "--self-signed") self_signed = true;
        else if (arg == "--user" && i + 1 < argc) as_run.user = argv[++i];
        else if (arg == "--log-level" && i + 1 < argc) level = argv[++i];
    }
    spdlog::set_default_logger(spdlog::stderr_color_mt("cspd"));
    spdlog::set_level(spdlog::level::from_str(level));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%P] %v");
    try {
        return KeyProcess(certs, self_signed, key_outsider(as_run)).run();
    } catch (const std::exception& e) {
        spdlog::critical("key process: {}", e.what());
        return 1;
    }
}

}  // namespace cspd
