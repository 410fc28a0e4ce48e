// Connection budgets: a flood that fills --max-connections on the public port leaves the status
// address (--status-listen) its own connections, and probes on the public port still get in.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// `n` connections that each sent half a request: accepted, counted, and going nowhere.
std::vector<std::unique_ptr<HttpClient>> flood(unsigned short port, int n) {
    std::vector<std::unique_ptr<HttpClient>> held;
    for (int i = 0; i < n; ++i) {
        held.push_back(std::make_unique<HttpClient>(port, 5s));
        held.back()->send("GET /csp/hello HTTP/1.1\r\n");
    }
    return held;
}

int status_of(std::optional<HttpResponse> r) { return r ? r->status : 0; }

TEST(ConnectionBudget, AFloodOfThePublicPortLeavesTheStatusAddressAnswering) {
    TestServer server({"--workers", "1", "--threads", "1", "--max-connections", "20", "--status-listen", "127.0.0.1:0"},
                      false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    const unsigned short status_port = server.status_port();
    ASSERT_NE(status_port, 0);
    ASSERT_TRUE(eventually([&] { return status_of(fetch(server.port(), "/csp/hello")) == 200; }, 5s));

    const auto held = flood(server.port(), 30);
    // The public port is full: new requests there are refused...
    ASSERT_TRUE(eventually([&] { return status_of(fetch(server.port(), "/csp/hello")) == 503; }, 5s));
    // ...while the status address answers every probe and report.
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(status_of(fetch(status_port, "/-/healthy")), 200);
        EXPECT_EQ(status_of(fetch(status_port, "/-/ready")), 200);
    }
    EXPECT_EQ(status_of(fetch(status_port, "/-/status")), 200);
    EXPECT_EQ(status_of(fetch(status_port, "/metrics")), 200);
    // Connections held on the status address count against its own budget, not the public one...
    auto held_status = flood(status_port, 10);
    EXPECT_EQ(status_of(fetch(status_port, "/-/healthy")), 200);
    // ...which is bounded too: 32 held, the next is refused; one let go, one gets in again.
    auto more = flood(status_port, 22);
    EXPECT_TRUE(eventually([&] { return status_of(fetch(status_port, "/-/healthy")) == 503; }, 5s));
    held_status.pop_back();
    EXPECT_TRUE(eventually([&] { return status_of(fetch(status_port, "/-/healthy")) == 200; }, 5s));
}

TEST(ConnectionBudget, ProbesOnAFullPublicPortStillGetIn) {
    TestServer server({"--workers", "1", "--threads", "1", "--max-connections", "20"});
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] { return status_of(fetch(server.port(), "/csp/hello")) == 200; }, 5s));
    const auto held = flood(server.port(), 40);  // the limit, the probes' reserve, and more
    // The reserve's connections are let go within a couple of seconds; then a probe gets in.
    EXPECT_TRUE(eventually([&] { return status_of(fetch(server.port(), "/-/healthy")) == 200; }, 5s));
    EXPECT_TRUE(eventually([&] { return status_of(fetch(server.port(), "/-/ready")) == 200; }, 5s));
    // Anything else past the limit is refused, with the reason.
    std::optional<HttpResponse> refused;
    for (int i = 0; i < 10 && !refused; ++i) {
        auto r = fetch(server.port(), "/csp/hello");
        if (r && r->status == 503) refused = r;
    }
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->header("connection"), "close");
    EXPECT_TRUE(server.wait_for_log("refusing new ones with 503"));
}

}  // namespace
}  // namespace cspd::test
