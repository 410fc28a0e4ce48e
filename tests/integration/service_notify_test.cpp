// systemd's Type=notify with the test as the service manager: a unix datagram socket it binds,
// passed to cspd as NOTIFY_SOCKET. cspd must say READY=1 once it serves, WATCHDOG=1 while it does
// (only when WATCHDOG_USEC asks), STOPPING=1 when it drains, and only its main process may speak.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

struct Notification {
    std::string text;
    pid_t sender = 0;
};

class NotifySocket {
public:
    explicit NotifySocket(const std::filesystem::path& path) : path_(path) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
            throw std::runtime_error("bind " + path.string() + ": " + std::strerror(errno));
        const int on = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);  // who sent each message
    }
    ~NotifySocket() { ::close(fd_); }

    /// The next message, or an empty text if none comes within `timeout`.
    Notification receive(std::chrono::milliseconds timeout) {
        pollfd waiting{fd_, POLLIN, 0};
        if (::poll(&waiting, 1, static_cast<int>(timeout.count())) != 1) return {};
        char text[4096];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
        iovec part{text, sizeof text};
        msghdr message{};
        message.msg_iov = &part;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(fd_, &message, 0);
        if (n < 0) return {};
        Notification got{std::string(text, static_cast<std::size_t>(n))};
        for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                ucred credentials;
                std::memcpy(&credentials, CMSG_DATA(c), sizeof credentials);
                got.sender = credentials.pid;
            }
        return got;
    }

    /// Messages until one contains `wanted` (included) or `timeout` passes.
    std::vector<Notification> until(const std::string& wanted, std::chrono::milliseconds timeout) {
        std::vector<Notification> seen;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            Notification n = receive(std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now()));
            if (n.text.empty()) break;
            seen.push_back(n);
            if (n.text.find(wanted) != std::string::npos) break;
        }
        return seen;
    }

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
    int fd_ = -1;
};

bool has(const std::vector<Notification>& seen, const std::string& text) {
    for (const auto& n : seen)
        if (n.text.find(text) != std::string::npos) return true;
    return false;
}

std::string environment_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// Starts `server` with NOTIFY_SOCKET (and WATCHDOG_USEC, if given) in its environment only.
void start_under_manager(TestServer& server, const NotifySocket& socket, const char* watchdog_usec) {
    ::setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
    if (watchdog_usec) ::setenv("WATCHDOG_USEC", watchdog_usec, 1);
    server.start();
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
}

TEST(ServiceNotify, MasterSaysReadyOnceWorkersServeKeepsTheWatchdogFedAndSaysStoppingOnDrain) {
    TempDir dir;
    NotifySocket manager(dir / "notify");
    TestServer server({"--workers", "2"}, false);
    start_under_manager(server, manager, "400000");  // WatchdogSec=0.4: WATCHDOG=1 every 200 ms

    const std::vector<Notification> before_ready = manager.until("READY=1", 10s);
    ASSERT_FALSE(before_ready.empty());
    EXPECT_NE(before_ready.back().text.find("READY=1"), std::string::npos) << before_ready.back().text;
    EXPECT_NE(before_ready.back().text.find("STATUS=serving on 127.0.0.1:"), std::string::npos)
        << before_ready.back().text;
    EXPECT_EQ(before_ready.back().sender, server.pid());
    auto probe = fetch(server.port(), "/-/ready");  // READY means it serves now
    ASSERT_TRUE(probe);
    EXPECT_EQ(probe->status, 200);

    // Workers must not speak for the service: the variables are not in their environment.
    const std::vector<pid_t> workers = server.worker_pids();
    ASSERT_EQ(workers.size(), 2u);
    for (pid_t worker : workers) {
        const std::string environment = environment_of(worker);
        EXPECT_EQ(environment.find("NOTIFY_SOCKET="), std::string::npos);
        EXPECT_EQ(environment.find("WATCHDOG_USEC="), std::string::npos);
    }

    unsigned keep_alives = 0;
    for (auto until = std::chrono::steady_clock::now() + 1500ms; std::chrono::steady_clock::now() < until;) {
        const Notification n = manager.receive(500ms);
        ASSERT_FALSE(n.text.empty()) << "no WATCHDOG=1 within 500 ms, with WATCHDOG_USEC=400000";
        EXPECT_EQ(n.text, "WATCHDOG=1");
        EXPECT_EQ(n.sender, server.pid());
        ++keep_alives;
    }
    EXPECT_GE(keep_alives, 5u);  // every 200 ms for 1.5 s; the master's tick is 100 ms

    ::kill(server.pid(), SIGTERM);
    const std::vector<Notification> at_stop = manager.until("STOPPING=1", 5s);
    ASSERT_TRUE(has(at_stop, "STOPPING=1"));
    EXPECT_EQ(at_stop.back().sender, server.pid());
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServiceNotify, OneProcessSaysReadyAndStoppingAndNoWatchdogUnlessAsked) {
    TempDir dir;
    NotifySocket manager(dir / "notify");
    TestServer server({"--single-process"}, false);
    start_under_manager(server, manager, nullptr);

    const std::vector<Notification> seen = manager.until("READY=1", 10s);
    ASSERT_TRUE(has(seen, "READY=1"));
    EXPECT_EQ(seen.back().sender, server.pid());
    EXPECT_NE(seen.back().text.find("one process"), std::string::npos) << seen.back().text;
    EXPECT_TRUE(manager.receive(700ms).text.empty()) << "nothing more until the drain";

    ::kill(server.pid(), SIGTERM);
    const std::vector<Notification> at_stop = manager.until("STOPPING=1", 5s);
    ASSERT_EQ(at_stop.size(), 1u);
    EXPECT_NE(at_stop.front().text.find("STOPPING=1\nSTATUS=draining"), std::string::npos) << at_stop.front().text;
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServiceNotify, OneProcessFeedsTheWatchdog) {
    TempDir dir;
    NotifySocket manager(dir / "notify");
    TestServer server({"--single-process"}, false);
    start_under_manager(server, manager, "300000");
    ASSERT_TRUE(has(manager.until("READY=1", 10s), "READY=1"));
    for (int i = 0; i < 4; ++i) {
        const Notification n = manager.receive(400ms);
        EXPECT_EQ(n.text, "WATCHDOG=1") << "keep-alive " << i;
        EXPECT_EQ(n.sender, server.pid());
    }
    EXPECT_EQ(server.stop(), 0);
}

TEST(ServiceNotify, WithoutANotifySocketNothingIsSaidAndServingIsUnchanged) {
    ::unsetenv("NOTIFY_SOCKET");
    TestServer server({"--workers", "1"});
    EXPECT_EQ(server.log().find("service manager"), std::string::npos);
    auto probe = fetch(server.port(), "/-/ready");
    ASSERT_TRUE(probe);
    EXPECT_EQ(probe->status, 200);
    EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace cspd::test
