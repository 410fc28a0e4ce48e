#include "redis_server.hpp"

#include "loopback.hpp"
#include "nginx.hpp"  // free_port

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace cspd::test {
namespace {

using namespace std::chrono_literals;
using RedisClock = std::chrono::steady_clock;

constexpr const char* kRedisServerBinary = "/usr/bin/redis-server";
constexpr auto kRedisTimeout = 5s;

// Where the RESP reply that starts at `at` ends, or npos while `bytes` does not hold all of it.
// RESP2's types, and RESP3's for good measure (a test may send HELLO 3).
std::size_t redis_reply_end(const std::string& bytes, std::size_t at) {
    if (at >= bytes.size()) return std::string::npos;
    const std::size_t line_end = bytes.find("\r\n", at);
    if (line_end == std::string::npos) return std::string::npos;
    const std::size_t after_line = line_end + 2;
    const auto number = [&] {
        long long value = 0;
        const auto [end, error] = std::from_chars(bytes.data() + at + 1, bytes.data() + line_end, value);
        if (error != std::errc() || end != bytes.data() + line_end)
            throw std::runtime_error("redis: malformed reply: " + bytes.substr(at, line_end - at));
        return value;
    };
    switch (bytes[at]) {
    case '+': case '-': case ':': case '_': case ',': case '#': case '(':
        return after_line;
    case '$': case '!': case '=': {
        const long long length = number();
        if (length < 0) return after_line;  // $-1: null
        const std::size_t end = after_line + static_cast<std::size_t>(length) + 2;
        return bytes.size() >= end ? end : std::string::npos;
    }
    case '*': case '~': case '>': case '%': {
        long long count = number();
        if (count < 0) return after_line;  // *-1: null
        if (bytes[at] == '%') count *= 2;  // a map: keys and values
        std::size_t end = after_line;
        for (long long i = 0; i < count && end != std::string::npos; ++i) end = redis_reply_end(bytes, end);
        return end;
    }
    default:
        throw std::runtime_error("redis: not a RESP reply: " + bytes.substr(at, 80));
    }
}

// Sends `request` on a connection of its own and reads one whole reply, by `deadline`; throws
// std::runtime_error saying why not.
std::string redis_exchange(unsigned short port, const std::string& request, RedisClock::time_point deadline) {
    const int fd = connect_loopback(port);
    if (fd < 0) throw std::runtime_error(std::string("redis: cannot connect: ") + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    const auto wait_for = [&](short events) {
        for (;;) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - RedisClock::now());
            if (left.count() <= 0) return false;
            pollfd waiting{fd, events, 0};
            const int ready = ::poll(&waiting, 1, static_cast<int>(left.count()));
            if (ready > 0) return true;
            if (ready < 0 && errno != EINTR) return false;
        }
    };
    for (std::size_t sent = 0; sent < request.size();) {
        const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(POLLOUT)) throw std::runtime_error("redis: timed out sending");
        } else {
            throw std::runtime_error(std::string("redis: cannot send: ") + std::strerror(errno));
        }
    }
    std::string reply;
    while (redis_reply_end(reply, 0) == std::string::npos) {
        char chunk[16384];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n > 0) {
            reply.append(chunk, static_cast<std::size_t>(n));
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_for(POLLIN)) throw std::runtime_error("redis: no complete reply within 5 s; got: " + reply);
        } else {
            throw std::runtime_error("redis: connection ended before the reply did (" +
                                     std::string(n == 0 ? "closed" : std::strerror(errno)) + "); got: " + reply);
        }
    }
    return reply;
}

// True once the redis-server whose pid is `pid` answers PING on `port` (another one that took
// the port first would answer too: INFO says whose it is).
bool redis_answers_ping(unsigned short port, pid_t pid) {
    try {
        const auto deadline = RedisClock::now() + 1s;
        if (redis_exchange(port, "PING\r\n", deadline) != "+PONG\r\n") return false;
        const std::string info = redis_exchange(port, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", deadline);
        return info.find("\r\nprocess_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
    } catch (const std::exception&) {  // not listening yet
        return false;
    }
}

}  // namespace

RedisServer::RedisServer() : log_(dir_ / "redis.log") {
    // The port was free when free_port() looked; should someone take it before redis binds it,
    // another one.
    for (int attempt = 1;; ++attempt) {
        port_ = free_port();
        const Outcome outcome = launch_and_wait(RedisClock::now() + kRedisTimeout);
        if (outcome == Outcome::up) return;
        if (outcome == Outcome::failed || attempt == 3)
            throw std::runtime_error("redis-server did not start; its log ends:\n" + log_tail());
    }
}

RedisServer::~RedisServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::kill(pid_, SIGCONT);  // a paused one handles SIGTERM only once it runs
    const auto deadline = RedisClock::now() + kRedisTimeout;
    while (RedisClock::now() < deadline) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
        std::this_thread::sleep_for(5ms);
    }
    reap_hard();
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void RedisServer::kill_hard() { reap_hard(); }

void RedisServer::start_again() {
    reap_hard();
    // redis sets SO_REUSEADDR, so connections of the old process in TIME_WAIT do not keep it from
    // binding; a socket someone else bound meanwhile would, for as long as they hold it.
    const auto deadline = RedisClock::now() + kRedisTimeout;
    for (;;) {
        const Outcome outcome = launch_and_wait(deadline);
        if (outcome == Outcome::up) return;
        if (outcome == Outcome::failed || RedisClock::now() >= deadline)
            throw std::runtime_error("redis-server did not start again on port " + std::to_string(port_) +
                                     "; its log ends:\n" + log_tail());
        std::this_thread::sleep_for(100ms);
    }
}

void RedisServer::pause() {
    if (pid_ <= 0) throw std::logic_error("RedisServer::pause: it does not run");
    ::kill(pid_, SIGSTOP);
    int status = 0;
    while (::waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
    }
    if (!WIFSTOPPED(status)) {  // it had died, and is reaped now
        pid_ = -1;
        throw std::runtime_error("RedisServer::pause: it had ended; its log ends:\n" + log_tail());
    }
}

void RedisServer::resume() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
    std::string request = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& arg : args) request += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
    return redis_exchange(port_, request, RedisClock::now() + kRedisTimeout);
}

std::string RedisServer::log_tail(std::size_t bytes) const {
    std::string text;
    try {
        text = read_file(log_);
    } catch (const std::exception&) {
        return "(no log at " + log_.string() + ")";
    }
    return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

void RedisServer::launch() {
    std::vector<std::string> args{kRedisServerBinary, "--bind", "127.0.0.1", "--port", std::to_string(port_),
                                  "--save", "", "--appendonly", "no", "--dir", dir_.path().string(),
                                  "--daemonize", "no", "--logfile", log_.string(), "--protected-mode", "no",
                                  "--unixsocket", (dir_ / "redis.sock").string(), "--unixsocketperm", "700"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Opened before the fork: between fork and exec the child of a threaded process may only
    // make async-signal-safe calls.
    const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0) {
        const int error = errno;
        if (log_fd >= 0) ::close(log_fd);
        if (null_fd >= 0) ::close(null_fd);
        throw std::runtime_error("cannot open " + log_.string() + " or /dev/null: " + std::strerror(error));
    }
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child == 0) {
        ::setpgid(0, 0);  // a terminal's ^C is the test's to handle; the death signal below ends it
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);  // the test died before the line above
        ::dup2(null_fd, 0);
        ::dup2(log_fd, 1);
        ::dup2(log_fd, 2);
        // No descriptor of the test's may live on in redis (a client socket it inherited would
        // keep a connection open after the test closed it).
        ::close_range(3, ~0U, 0);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    const int fork_error = errno;
    ::close(log_fd);
    ::close(null_fd);
    if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(fork_error));
    pid_ = child;
}

RedisServer::Outcome RedisServer::launch_and_wait(RedisClock::time_point deadline) {
    std::size_t earlier_log = 0;
    try {
        earlier_log = read_file(log_).size();  // a restart: what this start says comes after
    } catch (const std::exception&) {  // none yet
    }
    launch();
    for (;;) {
        if (redis_answers_ping(port_, pid_)) return Outcome::up;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            std::string said;
            try {
                said = read_file(log_);
            } catch (const std::exception&) {
            }
            said.erase(0, std::min(earlier_log, said.size()));
            return said.find("Address already in use") != std::string::npos ? Outcome::port_taken : Outcome::failed;
        }
        if (RedisClock::now() >= deadline) {
            reap_hard();
            return Outcome::failed;
        }
        std::this_thread::sleep_for(10ms);
    }
}

void RedisServer::reap_hard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

}  // namespace cspd::test
