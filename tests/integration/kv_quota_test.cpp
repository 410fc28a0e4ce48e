// The shared store's quota against the real binary: one handler filling its share cannot make
// another's writes fail; a handler of 2.3 is told CSP_KV_QUOTA, one built against 2.2 the
// CSP_KV_FULL it knows; the log says why and /metrics counts each handler's use.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// One put. A 404 is asked again (for up to 5 s): the worker that took the connection logs
/// "loaded" a moment before its loop serves the handler (a sanitizer run met that once).
std::string put(unsigned short port, const std::string& handler, const std::string& key) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        std::string body =
            fetch(port, "/csp/" + handler + "/kv/put?key=" + key + "&value=v").value_or(HttpResponse{}).body;
        if (body != "404 Not Found\n" || std::chrono::steady_clock::now() >= until) return body;
        std::this_thread::sleep_for(5ms);
    }
}

TEST(KvQuota, OneHandlerFillingItsShareLeavesTheOthersTheirs) {
    // 16 entries, 25% each: 4 a handler.
    TestServer server({"--workers", "2", "--kv-entries", "16", "--kv-quota", "25"});
    install_by_rename(test_handler("toolkit.so"), server.handlers() / "filler.so");
    install_by_rename(test_handler("toolkit.so"), server.handlers() / "other.so");
    install_by_rename(test_handler("abi2_2/toolkit.so"), server.handlers() / "older.so");
    // Both workers serve all three before anything is counted.
    const auto loads_of = [&](const std::string& name) {
        const std::string log = server.log(), line = "handler " + name + ": loaded";
        std::size_t n = 0;
        for (auto at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
        return n;
    };
    for (const std::string name : {"filler", "other", "older"}) {
        ASSERT_TRUE(eventually([&] { return loads_of(name) >= 2; }, 10s)) << name;
        ASSERT_EQ(put(server.port(), name, "probe-" + name), "rc 0\n") << name;
    }
    // Each holds one entry now (its probe): three more fit, then the quota says no.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(put(server.port(), "filler", "f" + std::to_string(i)), "rc 0\n") << i;
    for (int i = 3; i < 8; ++i) EXPECT_EQ(put(server.port(), "filler", "f" + std::to_string(i)), "rc -6\n") << i;
    // The other handlers still write, whichever worker answers.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(put(server.port(), "other", "o" + std::to_string(i)), "rc 0\n") << i;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(put(server.port(), "older", "d" + std::to_string(i)), "rc 0\n") << i;
    // Built against 2.2: told CSP_KV_FULL (-2), the failure it knows.
    EXPECT_EQ(put(server.port(), "older", "d3"), "rc -2\n");
    // Keys stay server-wide: filler may still rewrite its own, and read another's.
    EXPECT_EQ(put(server.port(), "filler", "f0"), "rc 0\n");
    EXPECT_EQ(fetch(server.port(), "/csp/filler/kv/get?key=o0").value_or(HttpResponse{}).body, "v");
    EXPECT_TRUE(server.wait_for_log("holds its whole share of the shared store (--kv-quota 25% of --kv-entries 16: 4"));
    const std::string metrics = fetch(server.port(), "/metrics").value_or(HttpResponse{}).body;
    EXPECT_NE(metrics.find("\ncspd_handler_kv_entries{handler=\"filler\"} 4\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\ncspd_handler_kv_entries{handler=\"other\"} 4\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\ncspd_handler_kv_quota_refusals_total{handler=\"filler\"} 5\n"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("\ncspd_handler_kv_quota_refusals_total{handler=\"older\"} 1\n"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("\ncspd_kv_quota_entries 4\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("\ncspd_kv_entries 12\n"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace cspd::test
