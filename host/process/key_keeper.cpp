#include "process/key_keeper.hpp"

#include "common/fd_passing.hpp"
#include "process/config.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/spawn_self.hpp"

#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace cspd {
using namespace std::chrono_literals;

KeyKeeper::KeyKeeper(boost::asio::io_context& io, const Config& config) : config_(config), timer_(io) {
    start();
    if (pid_ < 0) throw std::runtime_error("cannot start the key process");
    watch();
}

KeyKeeper::~KeyKeeper() {
    stopping_ = true;
    control_.reset();  // the key process ends when its control socket closes
    if (pid_ > 0) {
        // A lone server has no SIGCHLD handler: reap it here, briefly, so no zombie is left.
        for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) ::usleep(10'000);
    }
}

void KeyKeeper::start() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        spdlog::error("key process: socketpair: {}", std::strerror(errno));
        return;
    }
    UniqueFd ours(pair[0]), theirs(pair[1]);
    std::vector<std::string> args{"__keys", "--log-level", config_.log_level};
    if (!config_.certs_dir.empty()) args.insert(args.end(), {"--certs", config_.certs_dir.string()});
    if (config_.tls_self_signed) args.emplace_back("--self-signed");
    if (!config_.user.empty()) args.insert(args.end(), {"--user", config_.user});  // kept out of the keys
    std::string error;
    pid_ = spawn_self(args, theirs.get(), error);
    if (pid_ < 0) {
        spdlog::error("cannot start the key process: {}", error);
        return;
    }
    control_ = std::move(ours);
    for (auto& [index, kept] : kept_)
        if (!send_descriptor(control_.get(), kept.get()))
            spdlog::warn("key process: cannot hand it worker {}'s channel", index);
    if (restarting_)
        spdlog::info("key process started again as pid {}: HTTPS handshakes are served again", pid_);
    else
        spdlog::debug("key process started as pid {}", pid_);
    restarting_ = false;
}

UniqueFd KeyKeeper::channel_for(unsigned index) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        spdlog::error("key process: socketpair: {}", std::strerror(errno));
        return UniqueFd();
    }
    UniqueFd worker_end(pair[0]), keys_end(pair[1]);
    if (control_ && !send_descriptor(control_.get(), keys_end.get()))
        spdlog::warn("key process: cannot hand it worker {}'s channel now", index);
    kept_[index] = std::move(keys_end);
    return worker_end;
}

bool KeyKeeper::reaped(pid_t pid, int status) {
    if (pid != pid_ || pid_ < 0) return false;
    on_exit(status);
    return true;
}

void KeyKeeper::watch() {
    // The master's reaper may take it first (reaped()); a lone server has only this.
    timer_.expires_after(500ms);
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec || stopping_) return;
        int status = 0;
        if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) on_exit(status);
        if (start_due_ && !stopping_) {
            start_due_ = false;
            start();
        }
        watch();
    });
}

void KeyKeeper::on_exit(int status) {
    pid_ = -1;
    control_.reset();
    if (stopping_) return;
    spdlog::error("key process {}; starting it again (HTTPS handshakes fail meanwhile)",
                  WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                      : "exited with code " + std::to_string(WEXITSTATUS(status)));
    start_due_ = true;
    restarting_ = true;
}

}  // namespace cspd
