// The ABI promise on the real binary: a handler built against ABI 1's header answers as it
// always did; so do one built against ABI 2.0's (deferred replies, timers, fd watches) and one
// built against 2.1's (streams) on this later host; one built for a newer 2.x minor than the
// host is refused, naming both.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <csp/csp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

TEST(Abi, AHandlerBuiltAgainstAbi1KeepsWorking) {
    TestServer server({"--workers", "1"});
    install_by_rename(test_handler("abi1_echo.so"), server.handlers() / "abi1_echo.so");
    ASSERT_TRUE(server.wait_for_log("handler abi1_echo: loaded"));
    HttpClient client(server.port());
    client.send("POST /csp/abi1_echo/sub?name=Eva+M HTTP/1.1\r\nHost: h\r\nX-Agent: old\r\nContent-Length: 4\r\n\r\nbody");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("x-abi"), "1");
    EXPECT_EQ(r->header("content-type"), "text/plain");
    EXPECT_EQ(r->body, "abi1 POST /csp/abi1_echo/sub name=Eva M agent=old body=body\n");
}

TEST(Abi, AHandlerBuiltAgainstAbi20KeepsWorking) {
    TestServer server({"--workers", "1"});
    install_by_rename(test_handler("abi2_0/later.so"), server.handlers() / "later.so");
    ASSERT_TRUE(server.wait_for_log("handler later: loaded"));
    EXPECT_EQ(fetch(server.port(), "/csp/later/timer")->body, "v20 from a timer\n");
    EXPECT_EQ(fetch(server.port(), "/csp/later/fd")->body, "v20 from an fd watch\n");
    EXPECT_EQ(fetch(server.port(), "/csp/later/thread")->body, "v20 from a thread\n");
}

TEST(Abi, AHandlerBuiltAgainstAbi21KeepsWorking) {
    TestServer server({"--workers", "1"});
    install_by_rename(test_handler("abi2_1/stream.so"), server.handlers() / "stream.so");
    ASSERT_TRUE(server.wait_for_log("handler stream: loaded"));
    HttpClient client(server.port());
    client.send("GET /csp/stream/chunks?n=3 HTTP/1.1\r\nHost: h\r\n\r\n");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("transfer-encoding"), "chunked");
    EXPECT_EQ(r->body, "chunk 0\nchunk 1\nchunk 2\n");
    EXPECT_EQ(fetch(server.port(), "/csp/stream/refused")->body, "refused\n");
}

TEST(Abi, AHandlerBuiltAgainstAbi25KeepsWorkingInItsSandbox) {
    TestServer server({"--workers", "1"});
    install_by_rename(test_handler("abi2_5/keyed_limit.so"), server.handlers() / "keyed_limit.so");
    ASSERT_TRUE(server.wait_for_log("handler keyed_limit: loaded")) << server.log();
    const auto r = fetch(server.port(), "/csp/keyed_limit?key=old&rate=1000");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "key old let in\n");
}

TEST(Abi, AHandlerForANewerMinorIsRefusedNamingBothVersions) {
    TestServer server({"--workers", "1"});
    install_by_rename(test_handler("newer_minor.so"), server.handlers() / "newer_minor.so");
    const std::string expected = "built for SDK ABI version 2." + std::to_string(CSP_ABI_MINOR + 1) +
                                 ", newer than this host's 2." + std::to_string(CSP_ABI_MINOR);
    ASSERT_TRUE(server.wait_for_log(expected)) << server.log();
    EXPECT_EQ(fetch(server.port(), "/csp/newer_minor").value_or(HttpResponse{}).status, 404);
    const auto status = nlohmann::json::parse(fetch(server.port(), "/-/status").value_or(HttpResponse{}).body);
    bool refused = false;
    for (const auto& h : status.at("handlers"))
        refused |= h.at("name") == "newer_minor" && h.at("state") == "refused" &&
                   h.at("last_refusal").get<std::string>().find(expected) != std::string::npos;
    EXPECT_TRUE(refused) << status.dump();
}

} // namespace
} // namespace cspd::test
