// SDK 2 against the real binary: blocking handlers run on the worker's pool and never stall
// the loop; deferred replies are finished from a thread, a timer and an fd watch, in request
// order; a client that leaves is reported; late answers get 504; reloads and drains wait
// for replies still owed.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// Drops `file` in (as `as`) and waits until /-/status says it is live: files dropped one after
/// another are vetted side by side, so the second may be served before the first.
void add_handler(TestServer& server, const std::string& file, const std::string& as = "") {
    const std::filesystem::path from =
        file == "hello.so" ? shipped_handler(file) : test_handler(file);
    const std::string name = (as.empty() ? from.filename() : std::filesystem::path(as)).stem().string();
    install_by_rename(from, server.handlers() / (as.empty() ? from.filename().string() : as));
    const std::string live = "\"name\": \"" + name + "\"";
    eventually(
        [&] {
            const std::string body = fetch(server.port(), "/-/status").value_or(HttpResponse{}).body;
            const std::size_t at = body.find(live);
            return at != std::string::npos && body.find("\"state\": \"live\"", at) < body.find('}', at);
        },
        std::chrono::seconds(10));
}

/// Installs the blocking test handler and waits until it answers.
bool add_slow(TestServer& server) {
    add_handler(server, "slow.so");
    return eventually([&] { return fetch(server.port(), "/csp/slow?ms=0").value_or(HttpResponse{}).status == 200; },
                      std::chrono::seconds(5));
}

/// True once blocking calls 0..n-1 have each left their mark ("inN") in `gate`.
bool all_began(const TempDir& gate, int n) {
    for (int i = 0; i < n; ++i)
        if (!std::filesystem::exists(gate / ("in" + std::to_string(i)))) return false;
    return true;
}

TEST(BlockingHandlers, RunOffTheLoopSoOtherEndpointsKeepAnswering) {
    // One event loop: a blocking call run on it would stop every other request. (The handler's
    // marks go beneath --data-dir: its sandbox lets it write there.)
    TempDir gate;
    TestServer server({"--workers", "1", "--threads", "1", "--blocking-threads", "8", "--data-dir", gate.path().string()});
    add_handler(server, "hello.so");
    ASSERT_TRUE(add_slow(server));
    const std::string barrier = (gate / "open").string();
    std::vector<std::unique_ptr<HttpClient>> held;
    for (int i = 0; i < 8; ++i) {
        held.push_back(std::make_unique<HttpClient>(server.port(), 30s));
        held.back()->send(get_line("/csp/slow/" + std::to_string(i) + "?barrier=" + barrier +
                                   "&mark=" + (gate / ("in" + std::to_string(i))).string()));
    }
    ASSERT_TRUE(eventually([&] { return all_began(gate, 8); }, 10s)) << "not every blocking call began";
    EXPECT_EQ(metric(server.port(), "cspd_blocking_calls_running"), 8);
    // All eight threads are held inside the handler, and the loop answers on.
    for (int i = 0; i < 50; ++i) {
        auto r = fetch(server.port(), "/csp/hello");
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 200);
    }
    std::ofstream(barrier) << "go";
    for (int i = 0; i < 8; ++i) {
        auto r = held[i]->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "slow done/" + std::to_string(i) + "\n");
    }
    // A thread counts itself idle just after it has handed its reply to the loop: soon, not at once.
    EXPECT_TRUE(eventually([&] { return metric(server.port(), "cspd_blocking_calls_running") == 0; }));
}

TEST(BlockingHandlers, SeeTheirRequestWholeWhateverTheLoopDoesMeanwhile) {
    TempDir gate;  // the handler's marks go beneath --data-dir: its sandbox lets it write there
    TestServer server({"--workers", "1", "--threads", "1", "--blocking-threads", "4", "--data-dir", gate.path().string()});
    add_handler(server, "hello.so");
    ASSERT_TRUE(add_slow(server));
    const std::string barrier = (gate / "open").string();
    std::vector<std::unique_ptr<HttpClient>> held;
    for (int i = 0; i < 4; ++i) {
        held.push_back(std::make_unique<HttpClient>(server.port(), 30s));
        held.back()->send("GET /csp/slow/%41%42" + std::to_string(i) + "?barrier=" + barrier + "&mark=" +
                          (gate / ("in" + std::to_string(i))).string() + " HTTP/1.1\r\nHost: h\r\nX-Tag: tag-" +
                          std::to_string(i) + "\r\n\r\n");
    }
    ASSERT_TRUE(eventually([&] { return all_began(gate, 4); }, 10s)) << "not every blocking call began";
    // Meanwhile the loop decodes other paths and its clients come and go.
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(fetch(server.port(), "/csp/hello/%7Ex%7E").value_or(HttpResponse{}).status, 200) << server.log();
    held[3].reset();  // one client leaves while its call runs
    std::ofstream(barrier) << "go";
    for (int i = 0; i < 3; ++i) {
        auto r = held[i]->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->body, "slow done/AB" + std::to_string(i) + " tag=tag-" + std::to_string(i) + "\n");
    }
    EXPECT_TRUE(eventually([&] { return metric(server.port(), "cspd_replies_owed") == 0; }));
}

TEST(BlockingHandlers, AFullPoolAnswers503WithRetryAfter) {
    TempDir gate;  // the handler's marks go beneath --data-dir: its sandbox lets it write there
    TestServer server({"--workers", "1", "--threads", "1", "--blocking-threads", "1", "--blocking-queue", "1",
                       "--data-dir", gate.path().string()});
    ASSERT_TRUE(add_slow(server));
    const std::string barrier = (gate / "open").string();
    HttpClient running(server.port(), 30s), queued(server.port(), 30s);
    running.send(get_line("/csp/slow?barrier=" + barrier + "&mark=" + (gate / "in").string()));
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(gate / "in"); }, 10s));
    queued.send(get_line("/csp/slow?barrier=" + barrier));
    ASSERT_TRUE(eventually([&] { return metric(server.port(), "cspd_blocking_calls_queued") == 1; }, 10s));
    auto refused = fetch(server.port(), "/csp/slow?barrier=" + barrier);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 503);
    EXPECT_EQ(refused->header("retry-after"), "1");
    EXPECT_EQ(metric(server.port(), "cspd_blocking_calls_refused_total"), 1);
    std::ofstream(barrier) << "go";
    EXPECT_EQ(running.read_response().value_or(HttpResponse{}).status, 200);
    EXPECT_EQ(queued.read_response().value_or(HttpResponse{}).status, 200);
}

TEST(BlockingHandlers, ACallPastTheHandlerTimeoutIsAnswered504) {
    TestServer server({"--workers", "1", "--handler-timeout", "1"});
    add_handler(server, "slow.so");
    add_handler(server, "hello.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/slow?ms=0").value_or(HttpResponse{}).status == 200; },
                           5s));
    TempDir gate;
    HttpClient client(server.port(), 30s);
    client.send(get_line("/csp/slow?barrier=" + (gate / "never").string()));
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 504);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_TRUE(server.wait_for_log("blocking call ran longer than --handler-timeout"));
    EXPECT_EQ(fetch(server.port(), "/csp/hello").value_or(HttpResponse{}).status, 200);
    std::ofstream(gate / "never") << "go";  // lets the thread go, so the server stops cleanly
}

class DeferredReplies : public ::testing::Test {
protected:
    // --no-rollback: a replaced version is then held by nothing but what it still owes, as the
    // reload test below needs (otherwise it stays loaded for a rollback during --quarantine-window).
    DeferredReplies() : server({"--workers", "1", "--threads", "1", "--pending-timeout", "2", "--no-rollback"}) {
        add_handler(server, "hello.so");
        add_handler(server, "later.so");
        EXPECT_TRUE(eventually(
            [&] { return fetch(server.port(), "/csp/later/now").value_or(HttpResponse{}).status == 200; }, 5s));
    }
    std::string aborts() { return fetch(server.port(), "/csp/later/aborts").value_or(HttpResponse{}).body; }

    TestServer server;
};

TEST_F(DeferredReplies, AreFinishedFromAThreadATimerAndAnFdWatch) {
    for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
             {"/csp/later/thread", "v1 from a thread\n"},
             {"/csp/later/timer", "v1 from a timer\n"},
             {"/csp/later/fd", "v1 from an fd watch\n"},
             {"/csp/later/now", "v1 during the call\n"}}) {
        auto r = fetch(server.port(), path);
        ASSERT_TRUE(r) << path;
        EXPECT_EQ(r->status, 200) << path;
        EXPECT_EQ(r->body, body) << path;
    }
}

TEST_F(DeferredReplies, PipelinedRequestsBehindOneAreAnsweredInOrder) {
    HttpClient client(server.port());
    client.send(get_line("/csp/later/timer?ms=100") + get_line("/csp/hello") + get_line("/csp/later/thread") +
                get_line("/csp/hello"));
    auto first = client.read_response();
    auto second = client.read_response();
    auto third = client.read_response();
    auto fourth = client.read_response();
    ASSERT_TRUE(first && second && third && fourth);
    EXPECT_EQ(first->body, "v1 from a timer\n");
    EXPECT_EQ(second->body, "<h1>HELLO WORLD</h1>");
    EXPECT_EQ(third->body, "v1 from a thread\n");
    EXPECT_EQ(fourth->body, "<h1>HELLO WORLD</h1>");
    // Many in flight on many connections at once, each answered with its own.
    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < 50; ++i) {
        clients.push_back(std::make_unique<HttpClient>(server.port()));
        clients.back()->send(get_line(i % 2 ? "/csp/later/thread" : "/csp/later/fd"));
    }
    for (int i = 0; i < 50; ++i) {
        auto r = clients[i]->read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->body, i % 2 ? "v1 from a thread\n" : "v1 from an fd watch\n");
    }
}

TEST_F(DeferredReplies, AnAnswerThatComesWhileEarlierOnesWaitForTheSocketQueuesBehindThem) {
    add_handler(server, "big.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/big").value_or(HttpResponse{}).status == 200; }));
    HttpClient client(server.port(), 10s);
    std::string pipeline;
    for (int i = 0; i < 8; ++i) pipeline += get_line("/csp/big");  // 8 MiB: more than the socket holds
    pipeline += get_line("/csp/later/timer?ms=100") + get_line("/csp/hello");
    client.send(pipeline);
    std::this_thread::sleep_for(400ms);  // not reading: the timer fires while the output waits
    for (int i = 0; i < 8; ++i) {
        auto r = client.read_response();
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->body.size(), 1u << 20) << i;
    }
    auto later = client.read_response();
    auto hello = client.read_response();
    ASSERT_TRUE(later && hello);
    EXPECT_EQ(later->body, "v1 from a timer\n");
    EXPECT_EQ(hello->body, "<h1>HELLO WORLD</h1>");
    EXPECT_EQ(client.get("/csp/hello").value_or(HttpResponse{}).status, 200);  // the connection goes on
}

TEST_F(DeferredReplies, MuchPipelinedBehindAnOwedAnswerWaitsInTheSocketNotInMemory) {
    HttpClient client(server.port(), 10s);
    std::string pipeline = get_line("/csp/later/timer?ms=300");
    int behind = 0;
    while (pipeline.size() < 200 * 1024) pipeline += get_line("/csp/hello"), ++behind;  // past what is kept unparsed
    client.send(pipeline);
    auto first = client.read_response();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->body, "v1 from a timer\n");
    for (int i = 0; i < behind; ++i) {
        auto r = client.read_response();
        ASSERT_TRUE(r) << i << " of " << behind;
        ASSERT_EQ(r->status, 200) << i;
    }
}

TEST_F(DeferredReplies, AClientThatLeavesIsReportedAndItsLateAnswerDropped) {
    {
        HttpClient client(server.port());
        client.send(get_line("/csp/later/never"));
        // The reply is owed before the client goes.
        ASSERT_TRUE(eventually([&] { return metric(server.port(), "cspd_replies_owed") == 1; }));
    }
    EXPECT_TRUE(eventually([&] { return aborts() == "gone=1 timeout=0 draining=0 dropped=1\n"; })) << aborts();
    EXPECT_EQ(metric(server.port(), "cspd_replies_owed"), 0);
    // The connection was closed, its answer dropped; the server is whole.
    EXPECT_EQ(fetch(server.port(), "/csp/hello").value_or(HttpResponse{}).status, 200);
}

TEST_F(DeferredReplies, AnUnfinishedReplyGets504AfterThePendingTimeout) {
    HttpClient client(server.port(), 10s);
    client.send(get_line("/csp/later/never"));
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 504);
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_TRUE(eventually([&] { return aborts() == "gone=0 timeout=1 draining=0 dropped=1\n"; })) << aborts();
    EXPECT_TRUE(server.wait_for_log("deferred reply not finished within --pending-timeout"));
}

TEST_F(DeferredReplies, AReloadKeepsTheOldVersionUntilItsRepliesAreFinished) {
    HttpClient owed(server.port(), 10s);
    owed.send(get_line("/csp/later/timer?ms=1500"));
    ASSERT_TRUE(eventually([&] { return server.log().find("later.so#") != std::string::npos; }));
    install_by_rename(test_handler("v2/later.so"), server.handlers() / "later.so");
    ASSERT_TRUE(eventually(
        [&] { return fetch(server.port(), "/csp/later/now").value_or(HttpResponse{}).body == "v2 during the call\n"; },
        5s));
    // v1 still owes the first client its answer: it is not unloaded yet.
    EXPECT_EQ(metric(server.port(), "cspd_replies_owed"), 1);
    EXPECT_EQ(server.log().find("unloaded"), std::string::npos) << server.log();
    auto r = owed.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "v1 from a timer\n");
    EXPECT_TRUE(server.wait_for_log("unloaded"));  // once answered, v1 goes
}

TEST_F(DeferredReplies, ADrainWaitsForRepliesStillOwed) {
    HttpClient owed(server.port(), 10s);
    owed.send(get_line("/csp/later/timer?ms=700"));
    ASSERT_TRUE(eventually([&] { return metric(server.port(), "cspd_replies_owed") == 1; }));
    ::kill(server.pid(), SIGTERM);
    auto r = owed.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "v1 from a timer\n");
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_EQ(server.stop(), 0);
}

} // namespace
} // namespace cspd::test
