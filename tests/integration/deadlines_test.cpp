// Timeouts measured from real timestamps: a timeout of N seconds never fires before N seconds,
// whatever the phase of the loop's once-a-second tick (it may fire up to a tick late).
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kTries = 50;

/// Sends `target` on kTries connections, one every 20 ms so they fall on every phase of the tick,
/// and returns how many were answered 200.
int answered_in_time(unsigned short port, const std::string& target) {
    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < kTries; ++i) {
        clients.push_back(std::make_unique<HttpClient>(port, 10s));
        clients.back()->send("GET " + target + " HTTP/1.1\r\nHost: h\r\n\r\n");
        std::this_thread::sleep_for(20ms);
    }
    int ok = 0;
    for (auto& client : clients) {
        const auto r = client->read_response();
        if (r && r->status == 200) ++ok;
        else ADD_FAILURE() << target << ": " << (r ? r->status_line : std::string("no answer"));
    }
    return ok;
}

TEST(Deadlines, ADeferredReplyOf200msIsNeverCutByAOneSecondPendingTimeout) {
    TestServer server({"--workers", "1", "--threads", "1", "--pending-timeout", "1"});
    install_by_rename(test_handler("later.so"), server.handlers() / "later.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/later/now").value_or(HttpResponse{}).status == 200; },
                           5s));
    EXPECT_EQ(answered_in_time(server.port(), "/csp/later/timer?ms=200"), kTries);
    EXPECT_FALSE(server.wait_for_log("--pending-timeout", 10ms));
}

TEST(Deadlines, ABlockingCallOf200msIsNeverCutByAOneSecondHandlerTimeout) {
    TestServer server({"--workers", "1", "--threads", "1", "--handler-timeout", "1", "--blocking-threads", "32"});
    install_by_rename(test_handler("slow.so"), server.handlers() / "slow.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/slow?ms=0").value_or(HttpResponse{}).status == 200; },
                           5s));
    EXPECT_EQ(answered_in_time(server.port(), "/csp/slow?ms=200"), kTries);
    EXPECT_FALSE(server.wait_for_log("ran longer than --handler-timeout", 10ms));
}

TEST(Deadlines, TheHeaderTimeoutGivesAWholeSecondAndThenCloses) {
    TestServer server({"--workers", "1", "--threads", "1", "--header-timeout", "1"});
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/hello").value_or(HttpResponse{}).status == 200; },
                           5s));
    // Half a request, finished 900 ms later: always in time, whatever the tick's phase.
    for (int i = 0; i < 5; ++i) {
        HttpClient client(server.port(), 10s);
        std::this_thread::sleep_for(std::chrono::milliseconds(190 * i));
        client.send("GET /csp/hello HTTP/1.1\r\n");
        std::this_thread::sleep_for(900ms);
        client.send("Host: h\r\n\r\n");
        const auto r = client.read_response();
        EXPECT_TRUE(r && r->status == 200) << "try " << i;
    }
    // One that never finishes is closed, a tick or so after the second.
    HttpClient stalled(server.port(), 10s);
    const auto began = Clock::now();
    stalled.send("GET /csp/hello HTTP/1.1\r\n");
    EXPECT_TRUE(stalled.closed_by_peer());
    const auto waited = Clock::now() - began;
    EXPECT_GE(waited, 1s);
    EXPECT_LT(waited, 5s);
}

}  // namespace
}  // namespace cspd::test
