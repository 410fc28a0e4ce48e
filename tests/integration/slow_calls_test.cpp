// A plain handler that holds its event loop (it sleeps, as a synchronous database call would)
// makes every other connection of that loop wait: past --slow-call-warn it is logged, rate-limited,
// with its name and what to do instead, and counted in /metrics.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(SlowCalls, ALoopHandlerThatSleepsIsNamedWithTheAdviceAndCounted) {
    TestServer server({"--workers", "1", "--threads", "1"});
    install_by_rename(test_handler("sleepy.so"), server.handlers() / "sleepy.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/sleepy").value_or(HttpResponse{}).status == 200; },
                           5s));
    EXPECT_FALSE(server.wait_for_log("held its event loop", 50ms));  // a quick call says nothing
    for (int i = 0; i < 5; ++i) EXPECT_EQ(fetch(server.port(), "/csp/sleepy?ms=200").value_or(HttpResponse{}).status, 200);
    ASSERT_TRUE(server.wait_for_log("held its event loop"));
    const std::string log = server.log();
    EXPECT_TRUE(std::regex_search(log, std::regex(R"(handler sleepy\.so#\d+ .*held its event loop 2\d\d ms \(--slow-call-warn 50 ms\))")))
        << log;
    EXPECT_NE(log.find("CSP_BLOCKING_HANDLER"), std::string::npos);
    EXPECT_NE(log.find("csp_reply_defer"), std::string::npos);
    // Five slow calls in about a second: said at most twice.
    EXPECT_LE(count_of(log, "held its event loop"), 2u);
    EXPECT_EQ(metric(server.port(), R"(cspd_handler_slow_calls_total{handler="sleepy"})"), 5);
}

TEST(SlowCalls, TheThresholdIsAFlagAndZeroTurnsItOff) {
    TestServer server({"--workers", "1", "--slow-call-warn", "0"});
    install_by_rename(test_handler("sleepy.so"), server.handlers() / "sleepy.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/sleepy").value_or(HttpResponse{}).status == 200; },
                           5s));
    EXPECT_EQ(fetch(server.port(), "/csp/sleepy?ms=120").value_or(HttpResponse{}).status, 200);
    EXPECT_EQ(metric(server.port(), R"(cspd_handler_slow_calls_total{handler="sleepy"})"), 0);
    EXPECT_FALSE(server.wait_for_log("held its event loop", 200ms));
}

}  // namespace
}  // namespace cspd::test
