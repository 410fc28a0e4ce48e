// The streaming examples, served by the real binary and read by real clients: clock's
// server-sent events by curl and by npm's EventSource (tests/sse), by many clients at once;
// export's 1 GiB CSV by curl, with the worker's memory flat throughout.
#include "http_client.hpp"
#include "test_server.hpp"
#include "sanitizers.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// Runs `command` and gives its standard output, whole.
std::string output_of(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return out;
    char chunk[4096];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) out.append(chunk, n);
    ::pclose(pipe);
    return out;
}

long rss_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

class StreamingExamples : public ::testing::Test {
protected:
    StreamingExamples() : server({"--workers", "1"}, false) {
        for (const char* name : {"clock", "export"})
            std::filesystem::copy_file(test_handler(std::string("examples/") + name + ".so"),
                                       server.handlers() / (std::string(name) + ".so"));
        server.start();
    }
    std::string url(const std::string& target) const {
        return "http://127.0.0.1:" + std::to_string(server.port()) + target;
    }
    TestServer server;
};

TEST_F(StreamingExamples, ClockIsReadByCurl) {
    const std::string events = output_of("curl -sN --max-time 20 '" + url("/csp/clock?n=2") + "'");
    const std::regex tick("event: tick\ndata: \\{\"time\":\"\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\",\"n\":(\\d)\\}\n\n");
    std::vector<std::string> numbers;
    for (auto it = std::sregex_iterator(events.begin(), events.end(), tick); it != std::sregex_iterator(); ++it)
        numbers.push_back((*it)[1]);
    EXPECT_EQ(numbers, (std::vector<std::string>{"1", "2"})) << events;
}

TEST_F(StreamingExamples, HeadOnTheClockThenGetOnTheSameConnection) {
    // The clock's stream never ends by itself: HEAD must still end with its head.
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/clock?n=1").has_value(); }, 5s));
    HttpClient client(server.port(), 5s);
    client.send("HEAD /csp/clock HTTP/1.1\r\nHost: h\r\n\r\n");
    auto head = client.read_response(true);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(head->header("content-type").rfind("text/event-stream", 0), 0u);
    client.send("GET /csp/clock?n=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    auto events = client.read_response();
    ASSERT_TRUE(events) << "the connection jammed behind the HEAD";
    EXPECT_NE(events->body.find("event: tick\n"), std::string::npos) << events->body;
}

TEST_F(StreamingExamples, ClockIsReadByEventSource) {
    // A real browser-style client: it checks the content type and parses the event stream itself.
    const std::string script = std::string(CSPD_SOURCE_DIR) + "/tests/sse/read_events.mjs";
    const std::string lines = output_of("node '" + script + "' '" + url("/csp/clock") + "' tick 3 2>&1");
    const std::regex event(R"(^tick \{"time":"[0-9T:Z-]+","n":(\d)\}$)");
    std::vector<std::string> numbers;
    std::istringstream in(lines);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_match(line, m, event)) numbers.push_back(m[1]);
    }
    EXPECT_EQ(numbers, (std::vector<std::string>{"1", "2", "3"})) << lines;
}

TEST_F(StreamingExamples, ClockServesManyClientsAtOnce) {
    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < 200; ++i) {
        clients.push_back(std::make_unique<HttpClient>(server.port()));
        clients.back()->send("GET /csp/clock HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n");
    }
    for (auto& c : clients) {
        auto head = c->read_head();
        ASSERT_TRUE(head);
        EXPECT_NE(head->find("Content-Type: text/event-stream"), std::string::npos);
        EXPECT_NE(c->read_until("\"n\":2}\n\n"), "");  // two events each, a second apart
    }
}

TEST_F(StreamingExamples, ExportStreamsAGibibyteInFlatMemory) {
    const pid_t worker = server.worker_pid();
    const long before = rss_kib(worker);
    std::atomic<bool> running{true};
    std::atomic<long> peak{before};
    std::thread sampler([&] {
        while (running) {
            peak = std::max(peak.load(), rss_kib(worker));
            std::this_thread::sleep_for(20ms);
        }
    });
    // curl writes the body to a pipe that this test reads and checks row by row as it comes.
    FILE* pipe = ::popen(("curl -s --max-time 120 '" + url("/csp/export?mb=1024") + "'").c_str(), "r");
    ASSERT_TRUE(pipe);
    char line[256];
    std::size_t bytes = 0, rows = 0, bad = 0;
    if (std::fgets(line, sizeof line, pipe)) {
        EXPECT_STREQ(line, "id,name,email,amount\n");
        bytes += std::strlen(line);
    }
    while (std::fgets(line, sizeof line, pipe)) {
        ++rows;
        bytes += std::strlen(line);
        const std::string id = std::to_string(rows);
        const std::string start = id + ",user" + id + ",user" + id + "@example.org,";
        if (std::strncmp(line, start.c_str(), start.size()) != 0) ++bad;
    }
    ::pclose(pipe);
    running = false;
    sampler.join();
    EXPECT_EQ(bad, 0u);
    EXPECT_GE(bytes, std::size_t(1) << 30);
    EXPECT_LT(bytes, (std::size_t(1) << 30) + 256);  // it stops at the row that reaches 1 GiB
#if defined(CSPD_TEST_ASAN)
    // AddressSanitizer keeps up to 256 MiB of freed memory in quarantine before reusing it.
    constexpr long kFlatKiB = 320 * 1024;
#else
    constexpr long kFlatKiB = 16 * 1024;
#endif
    EXPECT_LT(peak - before, kFlatKiB) << "KiB of growth while 1 GiB went out";
}

TEST(StreamingExample, ClockSaysGoodbyeAndEndsWhenTheServerDrains) {
    TestServer server({"--drain-timeout", "3"}, false);  // the drain warns about a second before its end
    std::filesystem::copy_file(test_handler("examples/clock.so"), server.handlers() / "clock.so");
    server.start();
    HttpClient client(server.port(), 10s);
    client.send("GET /csp/clock HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(client.read_head());
    ASSERT_NE(client.read_until("\"n\":1}\n\n"), "");
    ::kill(server.pid(), SIGTERM);
    const std::string rest = client.read_until("0\r\n\r\n");  // the last chunk: the stream ended cleanly
    EXPECT_NE(rest.find("event: bye\ndata: the server is stopping\n\n"), std::string::npos) << rest;
    EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace cspd::test
