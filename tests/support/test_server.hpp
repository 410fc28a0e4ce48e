// Runs the real cspd binary for black-box tests: its own handlers and www
// folders, a port the kernel picks, its log captured to a file.
#pragma once

#include "temp_dir.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace cspd::test {

class TestServer {
public:
    /// Starts cspd on 127.0.0.1 with an empty handlers folder and www folder
    /// (fill them before or after start), plus any `extra_args` (with `--port`, on that port, else on one the
    /// kernel picks; --log-level debug unless given). Throws if it does not come up. start() after stop()
    /// starts it again with the same folders and log.
    explicit TestServer(std::vector<std::string> extra_args = {}, bool start_now = true);
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    void start();
    /// SIGTERM, then waits up to `timeout`; returns the exit code, or -1 (killed / timed out).
    int stop(std::chrono::milliseconds timeout = std::chrono::seconds(15));

    unsigned short port() const { return port_; }
    /// The process started: the master (or the only process with --single-process).
    pid_t pid() const { return pid_; }
    /// The processes that serve: the master's children but the key process (or the process itself
    /// with --single-process).
    std::vector<pid_t> worker_pids() const;
    /// The first of them, waiting briefly for one to exist; -1 if none.
    pid_t worker_pid() const;
    const std::filesystem::path& handlers() const { return handlers_; }
    const std::filesystem::path& www() const { return www_; }
    std::string log() const;
    /// The port of --status-listen 127.0.0.1:0, from the start-up log; 0 if it has none.
    unsigned short status_port() const;
    /// The HTTPS port (--tls-port 0), from the start-up log; 0 if it has none.
    unsigned short tls_port() const;
    /// Polls the log for `text`; true once it appears.
    bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;
    /// Lines of /proc/PID/maps of every worker that name a private handler copy.
    std::size_t handler_mappings() const;

private:
    TempDir dir_;
    std::filesystem::path handlers_, www_, log_file_;
    std::vector<std::string> extra_args_;
    pid_t pid_ = -1;
    unsigned short port_ = 0;
};

/// Polls `condition` every 5 ms until it holds or `timeout` passes.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        struct timespec ts {
            0, 5'000'000
        };
        nanosleep(&ts, nullptr);
    }
    return condition();
}

}  // namespace cspd::test
