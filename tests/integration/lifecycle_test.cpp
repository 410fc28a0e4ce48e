// Start-up, command line and graceful stop of the real binary.
#include "command.hpp"
#include "http_client.hpp"
#include "test_server.hpp"
#include "sanitizers.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

std::string run_and_capture(const std::string& args, int& exit_code) {
    // Its folders are private temporary ones: as root it says workers may stay root (see TestServer).
    const bool serving = args.find("--handlers") != std::string::npos;
    std::string command = std::string(CSPD_BINARY) + " " + args + (serving && ::geteuid() == 0 ? " --user root" : "") + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    std::string out;
    char chunk[4096];
    while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) out.append(chunk, n);
    int status = ::pclose(pipe);
    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

TEST(Lifecycle, AWorkerKeepsMoreFreedBlocksPerSizeThanGlibcsSeven) {
    // An HTTP/2 read that ends dozens of streams frees more than glibc's per-thread cache keeps:
    // workers start with a larger one (worker_spawner.cpp), unless the operator set their own.
    TestServer server({"--workers", "1"});
    const pid_t worker = server.worker_pid();
    ASSERT_GT(worker, 0);
    std::ifstream file("/proc/" + std::to_string(worker) + "/environ", std::ios::binary);
    const std::string environment((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_NE(environment.find(std::string("GLIBC_TUNABLES=glibc.malloc.tcache_count=64") + '\0'), std::string::npos);
}

TEST(Lifecycle, PrintsHelpAndVersion) {
    int code = -1;
    std::string help = run_and_capture("--help", code);
    EXPECT_EQ(code, 0);
    for (const char* flag : {"--port", "--bind", "--handlers", "--www", "--workers", "--log-level"})
        EXPECT_NE(help.find(flag), std::string::npos) << flag;
    std::string version = run_and_capture("--version", code);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(version.rfind("cspd ", 0), 0u) << version;
}

TEST(Lifecycle, RefusesBadArgumentsClearly) {
    int code = 0;
    std::string out = run_and_capture("--log-level loud", code);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find("--log-level"), std::string::npos) << out;
    out = run_and_capture("--port 0 --handlers /nonexistent/folder", code);
    EXPECT_EQ(code, 1);
    EXPECT_NE(out.find("/nonexistent/folder"), std::string::npos) << out;
}

TEST(Lifecycle, SaysWhyWhenThePortIsTaken) {
    // A plain listener (no SO_REUSEPORT) holds the port: cspd cannot share it and must say so.
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(holder, 1), 0);
    socklen_t length = sizeof addr;
    ::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &length);
    TempDir dir;
    int code = 0;
    std::string out = run_and_capture("--bind 127.0.0.1 --port " + std::to_string(ntohs(addr.sin_port)) +
                                          " --handlers " + dir.path().string() + " --www " + dir.path().string(),
                                      code);
    ::close(holder);
    EXPECT_EQ(code, 1);
    EXPECT_NE(out.find("cannot start"), std::string::npos) << out;
    EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

TEST(Lifecycle, ASecondServerOnTheSameAddressRefusesToStartAndTheFirstKeepsEveryConnection) {
    // The first listens with SO_REUSEPORT, which would let a second one share the port silently
    // and take part of its connections: the second must stop instead, naming the first.
    TestServer first({"--workers", "2"}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), first.handlers() / "hello.so");
    first.start();
    ASSERT_TRUE(first.wait_for_log("handler hello: loaded"));
    TempDir dir;
    int code = 0;
    const std::string out = run_and_capture("--bind 127.0.0.1 --port " + std::to_string(first.port()) +
                                                " --workers 2 --handlers " + dir.path().string() + " --www " +
                                                dir.path().string(),
                                            code);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find("cannot listen on [127.0.0.1]:" + std::to_string(first.port()) + ": address in use"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("(pid " + std::to_string(first.pid()) + " (cspd))"), std::string::npos) << out;
    for (int i = 0; i < 40; ++i) {
        const auto r = fetch(first.port(), "/csp/hello");
        ASSERT_TRUE(r) << i;
        EXPECT_EQ(r->status, 200) << i;  // never the second one's 404
    }
    EXPECT_EQ(first.stop(), 0);
}

TEST(Lifecycle, ListensOnEveryBindAddressIPv4AndIPv6AtOnceWithIPv6Only) {
    // --bind twice: 127.0.0.1 (the test server's own) and [::], each with the plain port, the
    // HTTPS port and a status address of its own, in both workers.
    TestServer server({"--bind", "[::]", "--workers", "2", "--tls-port", "0", "--tls-self-signed", "--status-listen",
                       "127.0.0.1:0", "--status-listen", "[::1]:0"},
                      false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    ASSERT_TRUE(server.wait_for_log("handler hello: loaded"));
    const std::string port = std::to_string(server.port()), tls = std::to_string(server.tls_port());
    EXPECT_NE(server.log().find("listening on 127.0.0.1:" + port + " and [::]:" + port + " (HTTPS on " + tls + ")"),
              std::string::npos)
        << server.log();
    const auto status_of = [](const std::string& url) {
        return run_command("curl -sg -k -o /dev/null -w '%{http_code}' --max-time 5 '" + url + "'");
    };
    for (int i = 0; i < 8; ++i) {  // new connections: both workers' sockets
        EXPECT_EQ(status_of("http://127.0.0.1:" + port + "/csp/hello"), "200");
        EXPECT_EQ(status_of("http://[::1]:" + port + "/csp/hello"), "200");
        EXPECT_EQ(status_of("https://127.0.0.1:" + tls + "/csp/hello"), "200");
        EXPECT_EQ(status_of("https://[::1]:" + tls + "/csp/hello"), "200");
    }
    const std::string text = server.log();
    std::smatch v4, v6;
    ASSERT_TRUE(std::regex_search(text, v4, std::regex(R"(/metrics on 127\.0\.0\.1:(\d+) only)"))) << text;
    ASSERT_TRUE(std::regex_search(text, v6, std::regex(R"(/metrics on \[::1\]:(\d+) only)"))) << text;
    EXPECT_EQ(status_of("http://127.0.0.1:" + v4[1].str() + "/-/status"), "200");
    EXPECT_EQ(status_of("http://[::1]:" + v6[1].str() + "/metrics"), "200");
    // [::] is IPv6's alone: another IPv4 address is free on the same port (a dual-stack socket
    // would hold every IPv4 address too).
    const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in other{};
    other.sin_family = AF_INET;
    other.sin_port = htons(server.port());
    ::inet_pton(AF_INET, "127.0.0.2", &other.sin_addr);
    EXPECT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&other), sizeof other), 0) << std::strerror(errno);
    ::close(probe);
    EXPECT_EQ(server.stop(), 0);
}

TEST(Lifecycle, StopsOnSigtermWithExitCodeZero) {
    TestServer server;
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] {
        auto r = fetch(server.port(), "/csp/hello");
        return r && r->status == 200;
    }));
    EXPECT_EQ(server.stop(), 0);
}

TEST(Lifecycle, FinishesInFlightRequestsWhenStopping) {
    TestServer server;
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] {
        auto r = fetch(server.port(), "/csp/hello");
        return r && r->status == 200;
    }));
    // A request whose head is half sent when SIGTERM arrives is still answered.
    HttpClient client(server.port());
    client.send("GET /csp/hello HTTP/1.1\r\nHost: h\r\n");
    std::this_thread::sleep_for(50ms);
    ::kill(server.pid(), SIGTERM);
    std::this_thread::sleep_for(100ms);
    client.send("\r\n");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_EQ(server.stop(), 0);
}

TEST(Lifecycle, ClosesIdleKeepAliveConnectionsWhenStopping) {
    TestServer server;
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] {
        auto r = fetch(server.port(), "/csp/hello");
        return r && r->status == 200;
    }));
    HttpClient idle(server.port());
    ASSERT_TRUE(idle.get("/csp/hello"));
    auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(server.stop(), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);  // not held up by the idle client
    EXPECT_TRUE(idle.closed_by_peer());
}

TEST(Lifecycle, ACrashingHandlerIsNamedInTheReport) {
#if defined(CSPD_TEST_ASAN)
    GTEST_SKIP() << "under AddressSanitizer/UBSan the sanitizers own fatal signals and write their own report";
#endif
    for (const char* how : {"segv", "abort", "fpe"}) {
        SCOPED_TRACE(how);
        // In the folder before the start: every loop has it before it accepts a connection.
        TestServer server({}, false);
        std::filesystem::copy_file(test_handler("crash.so"), server.handlers() / "crash.so");
        server.start();
        HttpClient client(server.port());
        client.send(std::string("GET /csp/crash?how=") + how + " HTTP/1.1\r\nHost: h\r\n\r\n");
        EXPECT_TRUE(answered_as_crash(client));  // a 500, then the worker is gone
        EXPECT_TRUE(server.wait_for_log("cspd: CRASH: signal"));
        EXPECT_TRUE(server.wait_for_log("in handler crash.so#1"));
        EXPECT_TRUE(server.wait_for_log("cspd: backtrace:"));
        // Its frames name the file the user built (not the private copy loaded), with an offset
        // addr2line takes on that file: it names the function that faulted.
        EXPECT_TRUE(server.wait_for_log("(handler crash.so#1, ")) << server.log();
        const std::string text = server.log();
        std::smatch frame;
        ASSERT_TRUE(std::regex_search(text, frame, std::regex(R"(\ncrash\.so\+0x([0-9a-f]+) \(handler crash\.so#1, \d+ bytes, fnv [0-9a-f]{16}; addr2line -f -e crash\.so 0x\1\))")))
            << text;
        if (std::string(how) == "segv") {  // the faulting instruction itself (a call's return address may be past its function)
            EXPECT_EQ(run_command("addr2line -f -e " + test_handler("crash.so").string() + " 0x" + frame[1].str() +
                                  " | head -1"),
                      "crash\n");
        }
        const std::string report = text.substr(text.find("cspd: backtrace:"));
        EXPECT_FALSE(std::regex_search(report, std::regex(R"(/cspd-\d+-)"))) << "a private copy's path:\n" << report;
        // The master saw the real cause of death and put a new worker in its place.
        EXPECT_TRUE(server.wait_for_log("killed by signal")) << server.log();
        EXPECT_TRUE(eventually([&] {
            auto r = fetch(server.port(), "/csp/crash?how=no");
            return r && r->status == 200;
        }));
        EXPECT_EQ(server.stop(), 0);
    }
}

TEST(Lifecycle, ASingleProcessDiesOfAHandlerCrash) {
#if defined(CSPD_TEST_ASAN)
    GTEST_SKIP() << "under AddressSanitizer/UBSan the sanitizers own fatal signals and write their own report";
#endif
    TestServer server({"--single-process"}, false);
    std::filesystem::copy_file(test_handler("crash.so"), server.handlers() / "crash.so");
    server.start();
    HttpClient client(server.port());
    client.send("GET /csp/crash?how=segv HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_TRUE(answered_as_crash(client));
    EXPECT_TRUE(server.wait_for_log("in handler crash.so#1"));
    EXPECT_EQ(server.stop(), -1);  // no master: the process died of the signal, as the report says
}

TEST(Lifecycle, AnswersHealthAndReadinessProbes) {
    TestServer server;
    auto healthy = fetch(server.port(), "/-/healthy");
    ASSERT_TRUE(healthy);
    EXPECT_EQ(healthy->status, 200);
    EXPECT_EQ(healthy->body, "ok\n");
    EXPECT_EQ(healthy->header("cache-control"), "no-store");
    auto ready = fetch(server.port(), "/-/ready");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200);
    EXPECT_EQ(ready->body, "ready\n");

    // Once draining, a request still in flight learns the server is no longer ready.
    HttpClient client(server.port());
    client.send("GET /-/ready HTTP/1.1\r\nHost: h\r\n");
    std::this_thread::sleep_for(50ms);
    ::kill(server.pid(), SIGTERM);
    std::this_thread::sleep_for(100ms);
    client.send("\r\n");
    auto draining = client.read_response();
    ASSERT_TRUE(draining);
    EXPECT_EQ(draining->status, 503);
    EXPECT_EQ(draining->body, "draining\n");
    EXPECT_EQ(server.stop(), 0);
}

TEST(Lifecycle, ProbesCanBeTurnedOff) {
    TestServer server({"--no-probes"});
    EXPECT_EQ(fetch(server.port(), "/-/healthy")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/-/ready")->status, 404);
}

TEST(Lifecycle, ClosesIdleConnectionsAfterTheKeepAliveTimeout) {
    TestServer server({"--keepalive-timeout", "1"});
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    ASSERT_TRUE(eventually([&] {
        auto r = fetch(server.port(), "/csp/hello");
        return r && r->status == 200;
    }));
    HttpClient idle(server.port(), 5s);
    ASSERT_TRUE(idle.get("/csp/hello"));
    EXPECT_TRUE(idle.closed_by_peer());
}

}  // namespace
}  // namespace cspd::test
