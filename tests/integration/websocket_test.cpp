// WebSocket (RFC 6455) over real sockets: the project's conformance cases by Autobahn's
// categories (ws/ws_frames.py) on the plain and the TLS port, over HTTP/1.1 and over HTTP/2
// streams (RFC 8441), pings and the idle timeout, real clients (Debian's python3-websockets, npm's
// ws, Chromium over HTTP/1.1 and h2), a reload and a drain with conversations open, a crash in a
// callback, the connection budget, and the counts in /metrics and /-/status.
#include "command.hpp"
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <future>
#include <string>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;

const std::string kWsDir = std::string(CSPD_TEST_SOURCE_DIR) + "/integration/ws/";
const std::string kNodeClient = std::string(CSPD_TEST_SOURCE_DIR) + "/ws/echo_client.mjs";

class WebSocket : public ::testing::Test {
protected:
    /// `extra_handlers`: test handlers in place before the start too (each worker has them at once).
    void start(std::vector<std::string> more = {}, std::vector<std::string> extra_handlers = {}) {
        std::vector<std::string> args = {"--tls-port", "0", "--tls-self-signed"};
        if (std::find(more.begin(), more.end(), "--workers") == more.end()) args.insert(args.end(), {"--workers", "1"});
        if (std::find(more.begin(), more.end(), "--ws-max-message") == more.end())
            args.insert(args.end(), {"--ws-max-message", "65536"});  // what ws_frames.py's limit cases expect
        args.insert(args.end(), more.begin(), more.end());
        server_.emplace(args, false);
        std::filesystem::copy_file(test_handler("ws_probe.so"), server_->handlers() / "ws_probe.so");
        std::filesystem::copy_file(test_handler("examples/ws_echo.so"), server_->handlers() / "ws_echo.so");
        std::filesystem::copy_file(test_handler("examples/chat.so"), server_->handlers() / "chat.so");
        std::filesystem::copy_file(test_handler("ws_blocking.so"), server_->handlers() / "ws_blocking.so");
        for (const std::string& name : extra_handlers)
            std::filesystem::copy_file(test_handler(name), server_->handlers() / name);
        server_->start();
        ASSERT_TRUE(eventually([&] { return fetch(server_->port(), "/csp/ws_echo").has_value(); }, 5s));
    }

    /// Runs ws_frames.py against `port` with `flags`: every case must pass; returns how many ran.
    std::size_t run_cases(unsigned short port, const std::string& flags = "") {
        // Debian's python: --h2 needs its python3-h2.
        const std::string out =
            run_command("/usr/bin/python3 " + kWsDir + "ws_frames.py " + std::to_string(port) + " " + flags);
        json results;
        try {
            results = json::parse(out);
        } catch (const std::exception&) {
            ADD_FAILURE() << "ws_frames.py said: " << out;
            return 0;
        }
        for (const auto& [name, result] : results.items())
            EXPECT_TRUE(result["ok"].get<bool>()) << name << ": " << result["detail"].get<std::string>();
        return results.size();
    }

    std::string scenario(const std::string& args) {
        return run_command("/usr/bin/python3 " + kWsDir + "ws_scenarios.py " + args + " 2>&1");
    }

    /// Runs browser/chat.mjs on the chat page at `origin`: its JSON line (null if none), and all it said in `out`.
    static json chat_in_chromium(const std::string& origin, std::string& out) {
        out = run_command("node " + std::string(CSPD_TEST_SOURCE_DIR) + "/browser/chat.mjs " + origin + "/csp/chat 2>&1");
        const std::size_t brace = out.rfind('{');
        if (brace == std::string::npos) return nullptr;
        try {
            return json::parse(out.substr(brace));
        } catch (const std::exception&) {
            return nullptr;
        }
    }

    std::optional<TestServer> server_;
};

TEST_F(WebSocket, ConformanceCasesPassOverThePlainAndTheTlsPort) {
    start();
    EXPECT_GE(run_cases(server_->port()), 120u);
    EXPECT_GE(run_cases(server_->tls_port(), "--tls --only framing."), 10u);
    EXPECT_GE(run_cases(server_->tls_port(), "--tls --only close."), 20u);
    EXPECT_GE(run_cases(server_->tls_port(), "--tls --only cspd."), 4u);
    // The worker that answered every attack is the one that still serves.
    EXPECT_EQ(server_->worker_pids().size(), 1u);
    EXPECT_EQ(fetch(server_->port(), "/csp/ws_echo")->status, 426);
}

TEST_F(WebSocket, ConformanceCasesPassOverHttp2Streams) {
    start();
    // RFC 8441: h2c with prior knowledge on the plain port, h2 by ALPN on the TLS port; the h2.*
    // cases take the place of HTTP/1.1's handshake.* ones.
    EXPECT_GE(run_cases(server_->port(), "--h2"), 120u);
    EXPECT_GE(run_cases(server_->tls_port(), "--tls --h2"), 120u);
    EXPECT_EQ(server_->worker_pids().size(), 1u);
}

TEST_F(WebSocket, PingsASilentPeerAndClosesOneThatStopsAnswering) {
    start({"--ws-ping-interval", "1"});
    EXPECT_EQ(run_cases(server_->port(), "--timing --only timing."), 2u);
    EXPECT_EQ(run_cases(server_->port(), "--timing --only timing. --h2"), 2u);
}

TEST_F(WebSocket, ClosesAPeerSilentPastTheIdleTimeout) {
    start({"--ws-ping-interval", "0", "--ws-idle-timeout", "2"});
    EXPECT_EQ(run_cases(server_->port(), "--timing --only idle."), 1u);
    EXPECT_EQ(run_cases(server_->port(), "--timing --only idle. --h2"), 1u);
}

TEST_F(WebSocket, RealClientsTalkToIt) {
    start({"--ws-max-message", "1048576"});
    const std::string ports = std::to_string(server_->port()) + " " + std::to_string(server_->tls_port());
    const std::string python = run_command("/usr/bin/python3 " + kWsDir + "websockets_client.py " + ports + " 2>&1");
    EXPECT_NE(python.find("ok tls"), std::string::npos) << python;
    const std::string node = run_command("node " + kNodeClient + " " + ports + " 2>&1");
    EXPECT_NE(node.find("ok tls"), std::string::npos) << node;
}

TEST_F(WebSocket, NoWsDeflateDeclinesCompression) {
    start({"--no-ws-deflate"});
    EXPECT_EQ(scenario("extensions " + std::to_string(server_->port())), "ok: none\n");
    EXPECT_EQ(run_cases(server_->port(), "--only framing.text_65536"), 1u);
}

TEST_F(WebSocket, AReloadLeavesOpenConversationsOnTheVersionThatAcceptedThem) {
    start();
    const std::string out = scenario("reload " + std::to_string(server_->port()) + " " +
                                     test_handler("v2/ws_probe.so").string() + " " +
                                     (server_->handlers() / "ws_probe.so").string());
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
}

TEST_F(WebSocket, ABlockingHandlerAcceptsFromItsPoolThreadOverHttp1AndHttp2) {
    start();
    for (const std::string flags : {"", " --h2"}) {
        SCOPED_TRACE(flags);
        const std::string out = scenario("blocking " + std::to_string(server_->port()) + flags);
        EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
    }
    // Counted: the two conversations that began (one per protocol), both over; the two whose clients
    // left during the call never began.
    const auto status = json::parse(fetch(server_->port(), "/-/status")->body);
    EXPECT_EQ(status["websocket"]["accepted"].get<int>(), 2) << status["websocket"].dump();
    EXPECT_EQ(status["websocket"]["open"].get<int>(), 0) << status["websocket"].dump();
}

TEST_F(WebSocket, ADrainSendsGoingAwayToEveryConversation) {
    start();
    const std::string out = scenario("drain " + std::to_string(server_->port()) + " " + std::to_string(server_->pid()));
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
    EXPECT_EQ(server_->stop(), 0);
}

TEST_F(WebSocket, ADrainSendsGoingAwayToEveryConversationOnHttp2Streams) {
    start();
    const std::string out =
        scenario("drain " + std::to_string(server_->port()) + " " + std::to_string(server_->pid()) + " --h2");
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
    EXPECT_EQ(server_->stop(), 0);
}

TEST_F(WebSocket, ACrashInACallbackIsBlamedOnItsHandler) {
    start();
    const std::string out = scenario("crash " + std::to_string(server_->port()));
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out;
    EXPECT_TRUE(server_->wait_for_log("in handler ws_probe.so#", 10s)) << server_->log();
    // A new worker serves again.
    EXPECT_TRUE(eventually([&] { return fetch(server_->port(), "/csp/ws_echo").has_value(); }, 10s));
}

TEST_F(WebSocket, ACallbackThatNeverReturnsIsStoppedByTheWatchdog) {
    start({"--handler-timeout", "1"});
    const std::string out = scenario("crash " + std::to_string(server_->port()) + " hang");
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
    EXPECT_TRUE(server_->wait_for_log("in handler ws_probe.so#", 10s)) << server_->log();
    EXPECT_TRUE(eventually([&] { return fetch(server_->port(), "/csp/ws_echo").has_value(); }, 10s));
}

TEST_F(WebSocket, OpenConversationsCountTowardMaxConnections) {
    start({"--max-connections", "20"});
    // Held open, 20 conversations use the budget: the next client is refused while they last.
    auto held = std::async(std::launch::async, [&] { return scenario("hold " + std::to_string(server_->port()) + " 20 4"); });
    EXPECT_TRUE(eventually([&] {
        const auto answer = fetch(server_->port(), "/csp/ws_echo");
        return answer && answer->status == 503;
    }, 4s));
    const std::string out = held.get();
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out;
    EXPECT_TRUE(eventually([&] {
        const auto answer = fetch(server_->port(), "/csp/ws_echo");
        return answer && answer->status == 426;
    }, 5s));
}

TEST_F(WebSocket, TopicsReachSubscribersOnEveryWorker) {
    start({"--workers", "2"});
    const std::string out = scenario("workers " + std::to_string(server_->port()));
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
}

TEST_F(WebSocket, TopicsReachAWorkerThatReplacedALeakingOneGracefully) {
    // The successor binds the relay's other bank while the worker it replaces drains: afterwards
    // publishes still reach subscribers on both workers, whichever publishes. The limit is over a
    // sanitizer build's own footprint (about 100 MiB), and each leaking call keeps 16 MiB.
    start({"--workers", "2", "--worker-max-rss", "160"}, {"leak.so"});
    const std::vector<pid_t> before = server_->worker_pids();
    ASSERT_EQ(before.size(), 2u);
    for (int i = 0; i < 40 && server_->log().find("replacing it gracefully") == std::string::npos; ++i) {
        const auto leaked = fetch(server_->port(), "/csp/leak?mb=16");
        ASSERT_TRUE(leaked);
        ASSERT_EQ(leaked->status, 200);
    }
    ASSERT_TRUE(server_->wait_for_log("replacing it gracefully", 10s)) << server_->log();
    ASSERT_TRUE(server_->wait_for_log("replaced pid", 20s)) << server_->log();  // "... drained"
    ASSERT_TRUE(eventually([&] {
        const std::vector<pid_t> now = server_->worker_pids();
        return now.size() == 2 && now != before;
    }, 10s));
    const std::string out = scenario("workers " + std::to_string(server_->port()));
    EXPECT_EQ(out.rfind("ok:", 0), 0u) << out << server_->log();
}

TEST_F(WebSocket, TheChatExampleWorksInChromiumAcrossTwoWorkers) {
    start({"--workers", "2"});
    std::string out;
    const json result = chat_in_chromium("http://127.0.0.1:" + std::to_string(server_->port()), out);
    ASSERT_FALSE(result.is_null()) << out;
    EXPECT_TRUE(result.value("ok", false)) << out << server_->log();
    EXPECT_NE(result["workers"][0], result["workers"][1]) << out;
}

TEST_F(WebSocket, TheChatExampleWorksInChromiumOverHttp2) {
    TempDir dir;
    const auto access = dir / "access.log";
    start({"--workers", "2", "--access-log", access.string()});
    std::string out;
    const json result = chat_in_chromium("https://127.0.0.1:" + std::to_string(server_->tls_port()), out);
    ASSERT_FALSE(result.is_null()) << out;
    EXPECT_TRUE(result.value("ok", false)) << out << server_->log();
    EXPECT_EQ(result.value("protocol", ""), "h2") << out;
    EXPECT_NE(result["workers"][0], result["workers"][1]) << out;
    // Each tab's WebSocket went over its page's HTTP/2 connection: an extended CONNECT answered 200.
    std::string lines;
    EXPECT_TRUE(eventually([&] {
        std::ifstream in(access);
        lines.assign(std::istreambuf_iterator<char>(in), {});
        std::size_t n = 0;
        for (std::size_t at = 0; (at = lines.find("\"CONNECT /csp/chat HTTP/2.0\" 200 ", at)) != std::string::npos; ++at) ++n;
        return n >= 2;
    }, 5s)) << lines;
}

TEST_F(WebSocket, CountedInMetricsAndStatus) {
    start();
    EXPECT_GE(run_cases(server_->port(), "--only close.1000_with_reason"), 1u);
    EXPECT_GE(run_cases(server_->port(), "--only opcode.3_"), 1u);
    EXPECT_GE(run_cases(server_->port(), "--only cspd.topics"), 1u);
    const auto metrics = fetch(server_->port(), "/metrics");
    ASSERT_TRUE(metrics.has_value());
    const std::string& text = metrics->body;
    EXPECT_NE(text.find("cspd_websockets_total 5"), std::string::npos) << text;
    EXPECT_NE(text.find("cspd_websocket_closes_total{code=\"1000\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("cspd_websocket_closes_total{code=\"1002\"} 1"), std::string::npos) << text;
    // 20 publishes to two subscribers, and one after one left.
    EXPECT_NE(text.find("cspd_websocket_published_deliveries_total 41"), std::string::npos) << text;
    const auto status = fetch(server_->port(), "/-/status");
    ASSERT_TRUE(status.has_value());
    const json report = json::parse(status->body);
    EXPECT_EQ(report["websocket"]["accepted"].get<int>(), 5);
    EXPECT_EQ(report["websocket"]["open"].get<int>(), 0);
    // The topic case's three clients sent 22, 3 and 2 messages.
    EXPECT_EQ(report["websocket"]["messages_in"].get<int>(), 27);
    EXPECT_GT(report["websocket"]["bytes_out"].get<int>(), 0);
}

}  // namespace
}  // namespace cspd::test
