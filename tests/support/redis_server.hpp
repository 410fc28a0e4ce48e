// A redis-server of the test's own (Debian's /usr/bin/redis-server), for tests of topics across
// hosts: on 127.0.0.1 and a port that was free, nothing persisted (no RDB, no AOF), its folder and
// log in a TempDir. A test may kill it (its keys die with it), start it again empty on the same
// port, stop it in its tracks, and read its keys with command().
#pragma once

#include "temp_dir.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace cspd::test {

class RedisServer {
public:
    /// Starts it and waits (up to 5 s) until it answers PING. Throws std::runtime_error, with the
    /// end of its log, if it does not. It dies with the thread that started it (PR_SET_PDEATHSIG),
    /// so that a test binary that crashes leaves none behind: start it on the test's own thread.
    RedisServer();
    /// SIGTERM (and SIGCONT, should it be paused), up to 5 s to exit, then SIGKILL; always reaped.
    ~RedisServer();
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    unsigned short port() const { return port_; }
    /// "redis://127.0.0.1:PORT".
    std::string url() const;
    /// "redis+unix:///.../redis.sock": it listens there too (its owner only).
    std::string unix_url() const { return "redis+unix://" + (dir_ / "redis.sock").string(); }

    /// SIGKILL, reaped: every key is gone with it (nothing persists).
    void kill_hard();
    /// A fresh, empty process on the same port with the same arguments (one still running is
    /// killed first); returns once it answers PING, retrying for up to 5 s should the port not be
    /// free yet. Throws like the constructor.
    void start_again();
    /// SIGSTOP; returns once it has stopped. The kernel still accepts connections and buffers what
    /// they send; nothing is answered until resume(). Throws if it does not run.
    void pause();
    /// SIGCONT.
    void resume();

    /// Sends one command as RESP (an array of bulk strings) on a connection of its own and
    /// returns the raw reply once it is complete: "+OK\r\n", ":3\r\n", "$-1\r\n" (no such key),
    /// "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "-ERR ...\r\n". Throws std::runtime_error if it cannot
    /// connect or no complete reply comes within 5 s (a paused server, say).
    std::string command(const std::vector<std::string>& args) const;

    /// The end of its log, for failure messages.
    std::string log_tail(std::size_t bytes = 4000) const;

private:
    enum class Outcome { up, port_taken, failed };
    /// Forks and execs redis-server on port_; does not wait.
    void launch();
    /// Launches and waits until it answers PING (up), exits saying its port is in use
    /// (port_taken), exits otherwise or `deadline` passes (failed; killed if need be).
    Outcome launch_and_wait(std::chrono::steady_clock::time_point deadline);
    /// SIGKILL and reap, if it runs.
    void reap_hard();

    TempDir dir_;
    std::filesystem::path log_;
    unsigned short port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace cspd::test
