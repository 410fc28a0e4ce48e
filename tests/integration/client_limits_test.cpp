// Per-client limits (--client-rate, --client-burst, --client-connections, --trust-proxy), over real
// sockets from more than one loopback address (127.0.0.1 and 127.0.0.2 are two clients), with
// several workers and loops sharing one count, and behind real nginx.
#include "command.hpp"
#include "http_client.hpp"
#include "nginx.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int code_of(const std::optional<HttpResponse>& r) { return r ? r->status : 0; }

/// What one client got while it sent requests as fast as it could.
struct Tally {
    std::atomic<long> ok{0}, limited{0}, other{0}, bad_retry_after{0};
    Clock::time_point first{}, last{};
};

/// `connections` keep-alive connections from `source`, each sending GET `target` and reading the
/// answer back to back until `until`.
void hammer(unsigned short port, const char* source, const std::string& target, int connections,
            Clock::time_point until, Tally& tally) {
    std::vector<std::thread> threads;
    std::mutex times;
    tally.first = Clock::now();
    for (int c = 0; c < connections; ++c)
        threads.emplace_back([&] {
            std::unique_ptr<HttpClient> client;
            while (Clock::now() < until) {
                if (!client) client = std::make_unique<HttpClient>(port, 5s, source);
                client->send(get_line(target));
                const std::optional<HttpResponse> r = client->read_response();
                const Clock::time_point at = Clock::now();
                {
                    std::lock_guard lock(times);
                    tally.last = std::max(tally.last, at);
                }
                if (!r) {
                    ++tally.other;
                    client.reset();
                    continue;
                }
                if (r->status == 200) {
                    ++tally.ok;
                } else if (r->status == 429) {
                    ++tally.limited;
                    // At 100 a second, the next request fits within 10 ms: Retry-After says 1.
                    if (r->header("retry-after") != "1") ++tally.bad_retry_after;
                } else {
                    ++tally.other;
                }
            }
        });
    for (auto& t : threads) t.join();
}

TEST(ClientRate, HoldsOneClientToItsRateAcrossWorkersAndLoopsAndLeavesAnotherAlone) {
    TestServer server({"--workers", "2", "--threads", "2", "--client-rate", "100", "--client-burst", "20",
                       "--status-listen", "127.0.0.1:0", "--log-level", "info"},
                      false);
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/-/healthy")) == 200; }, 5s));
    ASSERT_TRUE(eventually([&] { return code_of(HttpClient(server.port(), 5s, "127.0.0.3").get("/csp/hello")) == 200; }, 5s));

    // The second client asks ten times a second, well inside its own 100.
    Tally second;
    const Clock::time_point until = Clock::now() + 5s;
    std::thread polite([&] {
        HttpClient client(server.port(), 5s, "127.0.0.2");
        while (Clock::now() < until) {
            const int status = code_of(client.get("/csp/hello"));
            (status == 200 ? second.ok : second.other)++;
            std::this_thread::sleep_for(100ms);
        }
    });
    Tally first;
    hammer(server.port(), "127.0.0.1", "/csp/hello", 8, until, first);
    polite.join();

    // GCRA lets the burst in, then one request every 10 ms: over the span the client asked, at
    // most 100 a second plus the burst (and one for the coarse clock's edge), and nearly all of
    // that (the 0.97 of 100 × 5 + 20).
    const double span_s = std::chrono::duration<double>(first.last - first.first).count();
    std::printf("client-rate 100, burst 20, 2 workers × 2 loops: %ld answered 200, %ld 429, %ld other, in %.3f s "
                "(at most %.1f allowed)\n",
                first.ok.load(), first.limited.load(), first.other.load(), span_s, 100 * span_s + 20);
    EXPECT_LE(first.ok.load(), long(100 * span_s + 20) + 1);
    EXPECT_GE(first.ok.load(), long(0.97 * (100 * 5 + 20)));
    EXPECT_GT(first.limited.load(), 10 * first.ok.load()) << "the client did not press hard enough to test the limit";
    EXPECT_EQ(first.other.load(), 0);
    EXPECT_EQ(first.bad_retry_after.load(), 0);
    EXPECT_GE(second.ok.load(), 40);
    EXPECT_EQ(second.other.load(), 0);

    // Counted for the whole host, whichever worker answers /metrics (on the status address, which
    // no limit counts).
    EXPECT_GE(metric(server.status_port(), "cspd_client_limited_total{limit=\"rate\"}"), double(first.limited.load()));
    // Probes are never limited, even for a client over its rate: it spends what came back into its
    // bucket meanwhile (one request every 10 ms), then asks for probes.
    HttpClient over(server.port(), 5s, "127.0.0.1");
    std::optional<HttpResponse> refused;
    for (int i = 0; i < 100 && code_of(refused) != 429; ++i) refused = over.get("/csp/hello");
    ASSERT_EQ(code_of(refused), 429);
    EXPECT_NE(refused->body.find("--client-rate"), std::string::npos) << refused->body;  // the answer says why
    for (int i = 0; i < 50; ++i) ASSERT_EQ(code_of(over.get("/-/healthy")), 200);
    // The operator sees who is limited on the status address, and the public never does.
    const auto operators = fetch(server.status_port(), "/-/status");
    ASSERT_EQ(code_of(operators), 200);
    EXPECT_NE(operators->body.find("\"most_limited\""), std::string::npos) << operators->body;
    EXPECT_NE(operators->body.find("\"address\": \"127.0.0.1\""), std::string::npos) << operators->body;
    EXPECT_EQ(code_of(HttpClient(server.port(), 5s, "127.0.0.4").get("/-/status")), 404);  // --status-listen's only
}

TEST(ClientRate, SaysHowLongToWaitAtSlowRates) {
    TestServer server({"--client-rate", "6/m", "--client-burst", "2"}, false);  // one every 10 s
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    HttpClient client(server.port(), 5s);
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/-/ready")) == 200; }, 5s));
    EXPECT_EQ(code_of(client.get("/csp/hello")), 200);
    EXPECT_EQ(code_of(client.get("/csp/hello")), 200);
    const auto refused = client.get("/csp/hello");
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 429);
    // 10 s from the first request, less what has passed since (a slow sanitizer build: a second or two).
    const int wait = std::stoi(refused->header("retry-after"));
    EXPECT_GE(wait, 8);
    EXPECT_LE(wait, 10);
    // Static files count too.
    EXPECT_EQ(code_of(client.get("/index.html")), 429);
}

TEST(ClientConnections, HoldsAClientToItsShareAndLetsAnotherIn) {
    TestServer server({"--workers", "2", "--threads", "2", "--client-connections", "50", "--log-level", "info"}, false);
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/-/ready")) == 200; }, 5s));

    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < 200; ++i) clients.push_back(std::make_unique<HttpClient>(server.port(), 5s, "127.0.0.1"));
    int ok = 0, refused = 0;
    std::vector<std::unique_ptr<HttpClient>> held;
    for (auto& c : clients) {
        const auto r = c->get("/csp/hello");
        if (code_of(r) == 200) {
            ++ok;
            held.push_back(std::move(c));
        } else if (code_of(r) == 503) {
            ++refused;
            EXPECT_NE(r->body.find("--client-connections"), std::string::npos) << r->body;
            EXPECT_TRUE(c->closed_by_peer());
        }
    }
    EXPECT_EQ(ok, 50);
    EXPECT_EQ(refused, 150);
    // Another address connects meanwhile and is served.
    EXPECT_EQ(code_of(HttpClient(server.port(), 5s, "127.0.0.2").get("/csp/hello")), 200);
    // A connection let go makes room for one more.
    held.resize(40);
    EXPECT_TRUE(eventually([&] { return code_of(HttpClient(server.port(), 5s, "127.0.0.1").get("/csp/hello")) == 200; }, 5s));
    EXPECT_GE(metric(server.port(), "cspd_client_limited_total{limit=\"connections\"}"), 150);
}

TEST(ClientConnections, WhatAWorkerHeldGoesWithItWhenItIsKilled) {
    TestServer server({"--workers", "1", "--client-connections", "5", "--log-level", "info"}, false);
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/csp/hello")) == 200; }, 5s));
    std::vector<std::unique_ptr<HttpClient>> held;
    for (int i = 0; i < 5; ++i) {
        held.push_back(std::make_unique<HttpClient>(server.port(), 5s));
        ASSERT_EQ(code_of(held.back()->get("/csp/hello")), 200);
    }
    EXPECT_EQ(code_of(fetch(server.port(), "/csp/hello")), 503);
    // The worker dies without closing anything; its successor must not inherit its count.
    const pid_t worker = server.worker_pid();
    ASSERT_GT(worker, 0);
    ::kill(worker, SIGKILL);
    ASSERT_TRUE(eventually([&] {
        const pid_t now = server.worker_pid();
        return now > 0 && now != worker && code_of(fetch(server.port(), "/-/ready")) == 200;
    }, 10s));
    held.clear();
    int ok = 0;
    std::vector<std::unique_ptr<HttpClient>> again;
    for (int i = 0; i < 5; ++i) {
        again.push_back(std::make_unique<HttpClient>(server.port(), 5s));
        ok += code_of(again.back()->get("/csp/hello")) == 200;
    }
    EXPECT_EQ(ok, 5);
}

TEST(ClientConnections, CountsHttp2StreamsAndWebSockets) {
    TestServer server({"--workers", "2", "--threads", "2", "--client-connections", "50", "--log-level", "info"}, false);
    install_by_rename(test_handler("later.so"), server.handlers() / "later.so");
    install_by_rename(test_handler("ws_probe.so"), server.handlers() / "ws_probe.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/csp/later/now")) == 200; }, 5s));
    // Five HTTP/2 connections open 20 streams each that stay open (/csp/later/never): the client
    // is held to 50 at once (each connection's own unit covers its first stream), the rest are
    // refused with REFUSED_STREAM.
    const std::string out = run_command("/usr/bin/python3 " + std::string(CSPD_TEST_SOURCE_DIR) +
                                        "/integration/h2/hold_streams.py " + std::to_string(server.port()) +
                                        " 5 20 /csp/later/never 2>&1");
    EXPECT_NE(out.find("open 50 refused 50; one more connection: GOAWAY REFUSED_STREAM"), std::string::npos) << out;
    // Once they are let go, the client has its whole share again: 50 WebSockets, each a
    // conversation that holds one.
    const std::string upgrade = "GET /csp/ws_probe?let=in HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                "Sec-WebSocket-Version: 13\r\n\r\n";
    std::vector<std::unique_ptr<HttpClient>> sockets;
    const auto open_websocket = [&](const char* source) {
        auto c = std::make_unique<HttpClient>(server.port(), 5s, source);
        c->send(upgrade);
        const std::string head = c->read_until("\r\n\r\n");
        const int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
        if (status == 101) sockets.push_back(std::move(c));
        return status;
    };
    ASSERT_TRUE(eventually([&] { return open_websocket("127.0.0.1") == 101; }, 5s));
    for (int i = 1; i < 50; ++i) EXPECT_EQ(open_websocket("127.0.0.1"), 101) << i;
    EXPECT_EQ(open_websocket("127.0.0.1"), 429);  // the 51st: a WebSocket is refused with 429
    EXPECT_EQ(open_websocket("127.0.0.2"), 101);  // another client has its own
}

/// nginx in front, as deploy/ ships it: it tells cspd who its client was in X-Forwarded-For and
/// connects from 127.0.0.3, the one address cspd trusts.
std::unique_ptr<Nginx> proxy_for(unsigned short cspd) {
    return std::make_unique<Nginx>("  server {\n    listen 127.0.0.1:@PORT@;\n    location / {\n"
                                   "      proxy_pass http://127.0.0.1:" + std::to_string(cspd) + ";\n"
                                   "      proxy_bind 127.0.0.3;\n      proxy_http_version 1.1;\n"
                                   "      proxy_set_header Connection \"\";\n"
                                   "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
                                   "    }\n  }\n");
}

TEST(TrustProxy, LimitsEachClientBehindNginxApartAndIgnoresForgedAddresses) {
    TempDir dir;
    const auto access_log = dir / "access.log";
    TestServer server({"--workers", "2", "--threads", "1", "--client-rate", "1/m", "--client-burst", "5",
                       "--trust-proxy", "127.0.0.3", "--access-log", access_log.string(), "--log-level", "info"},
                      false);
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    server.start();
    const auto nginx = proxy_for(server.port());
    ASSERT_TRUE(eventually([&] { return code_of(fetch(nginx->port(), "/-/ready")) == 200; }, 5s));

    // The handler sees the client nginx names, not nginx.
    HttpClient a(nginx->port(), 5s, "127.0.0.1");
    const auto seen = a.get("/csp/echo");
    ASSERT_EQ(code_of(seen), 200);
    EXPECT_NE(seen->body.find("client=127.0.0.1\n"), std::string::npos) << seen->body;
    // A forged X-Forwarded-For from the client is kept by nginx, but sits left of what nginx adds.
    int a_ok = 1;
    for (int i = 0; i < 8; ++i) {
        a.send("GET /csp/echo HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 10.0.0." + std::to_string(i) + "\r\n\r\n");
        a_ok += code_of(a.read_response()) == 200;
    }
    EXPECT_EQ(a_ok, 5);  // the burst, then 429: the forged addresses bought it nothing
    // The second client behind the same nginx has a bucket of its own.
    HttpClient b(nginx->port(), 5s, "127.0.0.2");
    const auto b_seen = b.get("/csp/echo");
    ASSERT_EQ(code_of(b_seen), 200);
    EXPECT_NE(b_seen->body.find("client=127.0.0.2\n"), std::string::npos) << b_seen->body;
    // Straight to cspd from a peer it does not trust, X-Forwarded-For is passed on and ignored.
    HttpClient direct(server.port(), 5s, "127.0.0.4");
    direct.send("GET /csp/echo HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 127.0.0.2\r\nX-Test: forged\r\n\r\n");
    const auto d = direct.read_response();
    ASSERT_EQ(code_of(d), 200);
    EXPECT_NE(d->body.find("client=127.0.0.4\n"), std::string::npos) << d->body;
    // /-/status on the public port says how many were limited, never who.
    const auto everyone = HttpClient(server.port(), 5s, "127.0.0.5").get("/-/status");
    ASSERT_EQ(code_of(everyone), 200);
    EXPECT_NE(everyone->body.find("\"clients\""), std::string::npos) << everyone->body;
    EXPECT_EQ(everyone->body.find("most_limited"), std::string::npos) << everyone->body;
    // The access log writes the client nginx named, or the peer itself when it is not trusted.
    server.stop();
    const std::string lines = read_file(access_log);
    EXPECT_NE(lines.find("\n127.0.0.2 - - ["), std::string::npos) << lines;
    EXPECT_NE(lines.find("\n127.0.0.4 - - ["), std::string::npos) << lines;
    EXPECT_EQ(lines.find("127.0.0.3 - - ["), std::string::npos) << lines;
    EXPECT_NE(lines.find("GET /csp/echo HTTP/1.1\" 429 "), std::string::npos) << lines;  // refusals are logged as 429
}

TEST(TrustProxy, CountsTheWebSocketsNginxCarriesForEachClient) {
    TestServer server({"--workers", "2", "--threads", "2", "--client-connections", "3", "--trust-proxy", "127.0.0.3",
                       "--log-level", "info"},
                      false);
    install_by_rename(test_handler("ws_probe.so"), server.handlers() / "ws_probe.so");
    install_by_rename(test_handler("ws_blocking.so"), server.handlers() / "ws_blocking.so");
    server.start();
    // nginx passes the upgrade on, as deploy/'s WebSocket location does.
    const Nginx nginx("  map $http_upgrade $connection_upgrade {\n    default upgrade;\n    '' '';\n  }\n"
                      "  server {\n    listen 127.0.0.1:@PORT@;\n    location / {\n"
                      "      proxy_pass http://127.0.0.1:" + std::to_string(server.port()) + ";\n"
                      "      proxy_bind 127.0.0.3;\n      proxy_http_version 1.1;\n"
                      "      proxy_set_header Upgrade $http_upgrade;\n"
                      "      proxy_set_header Connection $connection_upgrade;\n"
                      "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
                      "    }\n  }\n");
    const auto upgrade = [](const std::string& target) {
        return "GET " + target + " HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    };
    std::vector<std::unique_ptr<HttpClient>> open;
    const auto open_websocket = [&](const char* source, const std::string& target) {
        auto c = std::make_unique<HttpClient>(nginx.port(), 5s, source);
        c->send(upgrade(target));
        const std::string head = c->read_until("\r\n\r\n");
        const int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
        if (status == 101) open.push_back(std::move(c));
        return status;
    };
    ASSERT_TRUE(eventually([&] { return open_websocket("127.0.0.1", "/csp/ws_probe?let=in") == 101; }, 5s));
    // A handshake the handler turns down holds nothing after its answer.
    for (int i = 0; i < 4; ++i) EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_probe"), 403) << i;
    // Accepted on the loop and by a blocking call on the pool: each holds one of the client's 3,
    // although every one comes on a connection of nginx's.
    EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_probe?let=in"), 101);
    EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_blocking"), 101);
    EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_probe?let=in"), 429);  // the fourth
    EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_blocking"), 429);
    // Another client behind the same nginx has a share of its own.
    EXPECT_EQ(open_websocket("127.0.0.2", "/csp/ws_probe?let=in"), 101);
    // When a conversation ends, its unit goes back: the first client may open another.
    open.erase(open.begin());
    EXPECT_TRUE(eventually([&] { return open_websocket("127.0.0.1", "/csp/ws_probe?let=in") == 101; }, 5s));
    EXPECT_EQ(open_websocket("127.0.0.1", "/csp/ws_blocking"), 429);
    // Each refusal counted (asked from another address: 127.0.0.1's own connections are over its share).
    const auto metrics = HttpClient(server.port(), 5s, "127.0.0.5").get("/metrics");
    ASSERT_EQ(code_of(metrics), 200);
    const std::string counter = "cspd_client_limited_total{limit=\"connections\"} ";
    const std::size_t at = metrics->body.find(counter);
    ASSERT_NE(at, std::string::npos) << metrics->body;
    EXPECT_EQ(std::atol(metrics->body.c_str() + at + counter.size()), 3) << metrics->body;
}

/// One GET of /csp/echo on a new connection that opens with `header`.
std::optional<HttpResponse> fetch_via_proxy_header(unsigned short port, const std::string& header) {
    HttpClient c(port, 5s);
    c.send(header + get_line("/csp/echo"));
    return c.read_response();
}

/// Sends `header` then a GET of /csp/echo on one connection from 127.0.0.1: the client the handler saw.
std::string echoed_client(unsigned short port, const std::string& header) {
    HttpClient c(port, 5s);
    c.send(header + get_line("/csp/echo"));
    const auto r = c.read_response();
    if (!r) return "no answer";
    const std::size_t at = r->body.find("client=");
    return at == std::string::npos ? r->body : r->body.substr(at + 7, r->body.find('\n', at) - at - 7);
}

TEST(ProxyProtocol, TakesTheClientFromVersion1And2HeadersAndClosesConnectionsWithout) {
    TestServer server({"--workers", "2", "--threads", "2", "--proxy-protocol", "--client-rate", "1/m", "--client-burst",
                       "2", "--status-listen", "127.0.0.1:0", "--log-level", "info"},
                      false);
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    server.start();
    // The status address takes no header: the operator's probes reach it as they are.
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.status_port(), "/-/ready")) == 200; }, 5s));
    EXPECT_EQ(echoed_client(server.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n"), "203.0.113.7");
    EXPECT_EQ(echoed_client(server.port(), "PROXY TCP6 2001:db8::7 ::1 5555 80\r\n"), "2001:db8::7");
    std::string v2("\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c\xc6\x33\x64\x09\x7f\x00\x00\x01\x15\xb3\x00\x50", 28);
    EXPECT_EQ(echoed_client(server.port(), v2), "198.51.100.9");
    EXPECT_EQ(echoed_client(server.port(), "PROXY UNKNOWN\r\n"), "127.0.0.1");  // the peer stands
    // Its header in pieces, as a slow balancer might write it, is waited for.
    {
        HttpClient c(server.port(), 5s);
        c.send("PROXY TCP4 203.0.113.");
        std::this_thread::sleep_for(50ms);
        c.send("8 127.0.0.1 5555 80\r\n" + get_line("/csp/echo"));
        const auto r = c.read_response();
        ASSERT_TRUE(r);
        EXPECT_NE(r->body.find("client=203.0.113.8\n"), std::string::npos) << r->body;
    }
    // A connection without one is closed, unanswered, and the log says why.
    HttpClient plain(server.port(), 5s);
    plain.send(get_line("/csp/echo"));
    EXPECT_FALSE(plain.read_response());
    EXPECT_TRUE(server.wait_for_log("no PROXY protocol header")) << server.log();
    // The limits count the client the header names: 203.0.113.7 has one request of its burst of 2
    // left, 203.0.113.9 a whole burst of its own.
    EXPECT_EQ(code_of(fetch_via_proxy_header(server.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n")), 200);
    EXPECT_EQ(code_of(fetch_via_proxy_header(server.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n")), 429);
    EXPECT_EQ(code_of(fetch_via_proxy_header(server.port(), "PROXY TCP4 203.0.113.9 127.0.0.1 5555 80\r\n")), 200);
}

TEST(ProxyProtocol, OnlyATrustedPeerMayNameTheClient) {
    TestServer server({"--proxy-protocol", "--trust-proxy", "127.0.0.3", "--log-level", "info"}, false);
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    server.start();
    // From 127.0.0.1, not trusted: its header is read and set aside, and it is the client itself.
    EXPECT_EQ(echoed_client(server.port(), "PROXY TCP4 127.0.0.3 127.0.0.1 5555 80\r\n"), "127.0.0.1");
    HttpClient trusted(server.port(), 5s, "127.0.0.3");
    trusted.send("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n" + get_line("/csp/echo"));
    const auto r = trusted.read_response();
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("client=203.0.113.7\n"), std::string::npos) << r->body;
}

TEST(ProxyProtocol, NamesTheClientsBehindNginxStreamModule) {
    TestServer server({"--proxy-protocol", "--client-rate", "1/m", "--client-burst", "3", "--log-level", "info"}, false);
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    server.start();
    // nginx's stream module, proxy_protocol on: a TCP balancer in front (as HAProxy's send-proxy).
    const Nginx nginx("", "load_module /usr/lib/nginx/modules/ngx_stream_module.so;\nstream {\n  server {\n"
                          "    listen 127.0.0.1:@PORT@;\n    proxy_pass 127.0.0.1:" + std::to_string(server.port()) + ";\n"
                          "    proxy_protocol on;\n  }\n}\n");
    HttpClient a(nginx.port(), 5s, "127.0.0.1"), b(nginx.port(), 5s, "127.0.0.2");
    const auto seen = b.get("/csp/echo");
    ASSERT_EQ(code_of(seen), 200);
    EXPECT_NE(seen->body.find("client=127.0.0.2\n"), std::string::npos) << seen->body;
    int a_ok = 0;
    for (int i = 0; i < 5; ++i) a_ok += code_of(a.get("/csp/echo")) == 200;
    EXPECT_EQ(a_ok, 3);  // its burst; b's is its own
    EXPECT_EQ(code_of(b.get("/csp/echo")), 200);
}

TEST(HandlerLimit, ChargesTheKeysAHandlerNamesAcrossWorkers) {
    // No --client-* flag: csp_limit works on its own.
    TestServer server({"--workers", "2", "--threads", "2", "--log-level", "info"}, false);
    install_by_rename(test_handler("keyed_limit.so"), server.handlers() / "keyed_limit.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return code_of(fetch(server.port(), "/csp/keyed_limit?key=warm&rate=1000")) == 200; }, 5s));
    // Fresh connections land on either worker and loop: the key's bucket is the host's.
    int ok = 0, limited = 0;
    std::string retry_after;
    for (int i = 0; i < 12; ++i) {
        const auto r = fetch(server.port(), "/csp/keyed_limit?key=alice&rate=0.1");  // one every 10 s
        ok += code_of(r) == 200;
        if (code_of(r) == 429) {
            ++limited;
            retry_after = r->header("retry-after");
            EXPECT_EQ(r->body, "429 Too Many Requests\n");
        }
    }
    EXPECT_EQ(ok, 3);  // the burst
    EXPECT_EQ(limited, 9);
    EXPECT_TRUE(retry_after == "10" || retry_after == "9" || retry_after == "8") << retry_after;
    // Another key has its own bucket.
    EXPECT_EQ(code_of(fetch(server.port(), "/csp/keyed_limit?key=bob&rate=0.1")), 200);
    EXPECT_EQ(metric(server.port(), "cspd_client_limited_total{limit=\"handler\"}"), 9);
    EXPECT_EQ(metric(server.port(), "cspd_client_limited_total{limit=\"rate\"}"), 0);
}

}  // namespace
}  // namespace cspd::test
