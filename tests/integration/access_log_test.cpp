// --access-log over real sockets: goaccess reads the combined format and counts exactly what
// was sent; JSON lines parse whatever a client puts in its request; pending and streamed
// answers are logged when they end, and a client that left as 499; under wrk every response is
// on record; a pipe nobody reads drops lines, never requests; SIGUSR1 after a rename moves
// every later line to the new file.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

std::vector<std::string> lines_of(const std::filesystem::path& file) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// Runs `command`, returning its standard output.
std::string run(const std::string& command) {
    std::string out;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        char chunk[4096];
        for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) out.append(chunk, n);
        ::pclose(pipe);
    }
    return out;
}

int status_of(unsigned short port, const std::string& raw) {
    HttpClient client(port);
    client.send(raw);
    const auto response = client.read_response(raw.starts_with("HEAD "));
    return response ? response->status : -1;
}

/// The sum of a metric over all its label sets, or -1 without /metrics.
double metric_sum(unsigned short port, const std::string& name) {
    const auto metrics = fetch(port, "/metrics");
    if (!metrics) return -1;
    double sum = 0;
    std::istringstream in(metrics->body);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with(name + " ") || line.starts_with(name + "{")) sum += std::stod(line.substr(line.rfind(' ') + 1));
    return sum;
}

TEST(AccessLogOverSockets, GoaccessCountsExactlyTheRequestsAndStatusesSent) {
    TempDir dir;
    const auto log = dir / "access.log";
    TestServer server({"--workers", "2", "--access-log", log.string()}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    std::ofstream(server.www() / "a.txt") << "static\n";
    server.start();
    for (int i = 0; i < 10; ++i) ASSERT_EQ(status_of(server.port(), "GET /csp/hello HTTP/1.1\r\nHost: h\r\nUser-Agent: t/1\r\n\r\n"), 200);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(status_of(server.port(), "GET /a.txt HTTP/1.1\r\nHost: h\r\nReferer: http://r/\r\n\r\n"), 200);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(status_of(server.port(), "GET /nope.txt HTTP/1.1\r\nHost: h\r\n\r\n"), 404);
    for (int i = 0; i < 2; ++i) ASSERT_EQ(status_of(server.port(), "HEAD /csp/missing HTTP/1.1\r\nHost: h\r\n\r\n"), 404);
    ASSERT_EQ(status_of(server.port(), "BLAH\r\n\r\n"), 400);
    ASSERT_EQ(server.stop(), 0);  // the loops hand over what they hold, and the writers write it

    ASSERT_EQ(lines_of(log).size(), 20u);
    const auto report_file = dir / "report.json";
    run("goaccess " + log.string() + " --log-format=COMBINED --no-global-config -o " + report_file.string() +
        " 2>&1");
    std::ifstream in(report_file);
    ASSERT_TRUE(in) << "goaccess wrote no report";
    const auto report = nlohmann::json::parse(in);
    EXPECT_EQ(report["general"]["total_requests"], 20);
    EXPECT_EQ(report["general"]["failed_requests"], 0);
    std::map<std::string, int> by_code;
    for (const auto& group : report["status_codes"]["data"])
        for (const auto& item : group["items"]) by_code[item["data"].get<std::string>().substr(0, 3)] += item["hits"]["count"].get<int>();
    EXPECT_EQ(by_code["200"], 14);
    EXPECT_EQ(by_code["404"], 5);
    EXPECT_EQ(by_code["400"], 1);
}

TEST(AccessLogOverSockets, JsonLinesParseWhateverTheClientSent) {
    TempDir dir;
    const auto log = dir / "access.json";
    TestServer server({"--workers", "1", "--access-log", log.string(), "--access-log-format", "json"}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    const std::vector<std::string> hostile = {
        "GET /csp/hello?q=%22%5C HTTP/1.1\r\nHost: h\r\nUser-Agent: a\"b\\c\r\n\r\n",
        "GET /csp/hello?\"x\"=\\ HTTP/1.1\r\nHost: h\r\nUser-Agent: \"},{\"status\":200,\"x\":\"\r\n\r\n",
        "GET /csp/hello HTTP/1.1\r\nHost: h\r\nUser-Agent: \xff\xfe\xc3\x28 bad utf-8 \xe2\x82\xac\r\n\r\n",
        "GET /\xc3\xa9\xff HTTP/1.1\r\nHost: h\r\nReferer: \x80\x80\r\n\r\n",
        "GET /csp/hello HTTP/1.1\r\nHost: h\r\nUser-Agent: ctl\x01here\r\n\r\n",
        "GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET\t/\r\n\r\n",
    };
    for (const std::string& request : hostile) status_of(server.port(), request);
    ASSERT_EQ(server.stop(), 0);

    const auto lines = lines_of(log);
    ASSERT_EQ(lines.size(), hostile.size());  // one line each: none split, none lost
    for (const std::string& line : lines) {
        nlohmann::json doc;
        ASSERT_NO_THROW(doc = nlohmann::json::parse(line)) << line;
        EXPECT_TRUE(doc["status"].is_number()) << line;
        EXPECT_TRUE(doc["client"] == "127.0.0.1") << line;
    }
    const auto first = nlohmann::json::parse(lines[0]);
    EXPECT_EQ(first["user_agent"], "a\"b\\c");
    EXPECT_EQ(first["target"], "/csp/hello?q=%22%5C");
    EXPECT_EQ(first["handler"], "hello");
    const auto second = nlohmann::json::parse(lines[1]);
    EXPECT_EQ(second["user_agent"], "\"},{\"status\":200,\"x\":\"");
    const auto third = nlohmann::json::parse(lines[2]);
    EXPECT_NE(third["user_agent"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
    EXPECT_NE(third["user_agent"].get<std::string>().find("\xe2\x82\xac"), std::string::npos);  // kept
}

TEST(AccessLogOverSockets, PendingAndStreamedAnswersAreLoggedWhenTheyEndAndALeftClientAs499) {
    TempDir dir;
    const auto log = dir / "access.json";
    TestServer server({"--workers", "1", "--access-log", log.string(), "--access-log-format", "json",
                       "--pending-timeout", "1"},
                      false);
    std::filesystem::copy_file(test_handler("later.so"), server.handlers() / "later.so");
    std::filesystem::copy_file(test_handler("stream.so"), server.handlers() / "stream.so");
    server.start();
    const auto timer_answer = fetch(server.port(), "/csp/later/timer?ms=300");
    ASSERT_TRUE(timer_answer);
    EXPECT_EQ(timer_answer->status, 200);
    const auto streamed = fetch(server.port(), "/csp/stream/chunks?n=3");
    ASSERT_TRUE(streamed);
    EXPECT_EQ(streamed->status, 200);
    {
        HttpClient leaving(server.port());
        leaving.send("GET /csp/later/never HTTP/1.1\r\nHost: h\r\n\r\n");
        std::this_thread::sleep_for(200ms);  // it stays that long: its line's duration says so
    }  // gone before its answer
    const auto overdue = fetch(server.port(), "/csp/later/never?overdue");  // 504 past --pending-timeout
    ASSERT_TRUE(overdue);
    EXPECT_EQ(overdue->status, 504);
    std::map<std::string, nlohmann::json> by_target;
    ASSERT_TRUE(eventually(
        [&] {
            for (const std::string& line : lines_of(log)) {
                const auto doc = nlohmann::json::parse(line);
                by_target[doc["target"]] = doc;
            }
            return by_target.size() == 4;
        },
        5s));
    const auto& timer = by_target["/csp/later/timer?ms=300"];
    EXPECT_EQ(timer["status"], 200);
    EXPECT_GE(timer["duration_us"].get<std::uint64_t>(), 300'000u);  // logged when it ended
    EXPECT_EQ(timer["body_bytes"].get<std::size_t>(), timer_answer->body.size());
    EXPECT_GT(timer["bytes"].get<std::size_t>(), timer_answer->body.size() + 40);  // and its head
    const auto& stream = by_target["/csp/stream/chunks?n=3"];
    EXPECT_EQ(stream["status"], 200);
    EXPECT_GT(stream["bytes"].get<std::uint64_t>(), stream["body_bytes"].get<std::uint64_t>());
    EXPECT_GE(stream["body_bytes"].get<std::uint64_t>(), streamed->body.size());
    const auto& gone = by_target["/csp/later/never"];
    EXPECT_EQ(gone["status"], 499);
    EXPECT_GE(gone["duration_us"].get<std::uint64_t>(), 150'000u);
    const auto& late = by_target["/csp/later/never?overdue"];
    EXPECT_EQ(late["status"], 504);
    EXPECT_EQ(late["body_bytes"].get<std::size_t>(), overdue->body.size());
    EXPECT_GE(late["duration_us"].get<std::uint64_t>(), 1'000'000u);
}

TEST(AccessLogOverSockets, UnderWrkEveryResponseIsOnRecord) {
    TempDir dir;
    const auto log = dir / "access.log";
    TestServer server({"--workers", "2", "--access-log", log.string()}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    const std::string wrk = run("wrk -t2 -c16 -d2s http://127.0.0.1:" + std::to_string(server.port()) + "/csp/hello 2>&1");
    ASSERT_NE(wrk.find("requests in"), std::string::npos) << wrk;
    const double answered = metric_sum(server.port(), "cspd_requests_total");  // not counting this request
    ASSERT_GT(answered, 1000) << wrk;
    // The lines come within a second of their answers (the loops' batches), the /metrics one too.
    EXPECT_TRUE(eventually([&] { return double(lines_of(log).size()) == answered + 1; }, 5s))
        << lines_of(log).size() << " lines for " << answered << " responses";
}

TEST(AccessLogOverSockets, APipeNobodyReadsDropsLinesNotRequests) {
    TempDir dir;
    const auto fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // open, never read
    ASSERT_GE(reader, 0);
    TestServer server({"--workers", "1", "--access-log", fifo.string()}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    // Long lines (a 2 KiB User-Agent) fill the pipe and the writer's allowance quickly.
    const std::string agent(2048, 'u');
    const std::string wrk = run("wrk -t1 -c8 -d3s -H 'User-Agent: " + agent + "' http://127.0.0.1:" +
                                std::to_string(server.port()) + "/csp/hello 2>&1");
    ASSERT_NE(wrk.find("requests in"), std::string::npos) << wrk;
    EXPECT_EQ(wrk.find("Socket errors"), std::string::npos) << wrk;
    EXPECT_EQ(wrk.find("Non-2xx"), std::string::npos) << wrk;
    EXPECT_GT(metric_sum(server.port(), "cspd_access_log_dropped_total"), 0) << wrk;
    EXPECT_EQ(fetch(server.port(), "/csp/hello")->status, 200);  // still serving
    EXPECT_EQ(server.stop(), 0);  // and it stops, though the pipe is still full
    ::close(reader);
}

TEST(AccessLogOverSockets, Sigusr1AfterARenameMovesEveryLaterLineToTheNewFile) {
    TempDir dir;
    const auto log = dir / "access.log";
    TestServer server({"--workers", "2", "--access-log", log.string()}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    for (int i = 0; i < 20; ++i) ASSERT_EQ(fetch(server.port(), "/csp/hello?before=" + std::to_string(i))->status, 200);
    std::filesystem::rename(log, dir / "access.log.1");
    ::kill(server.pid(), SIGUSR1);
    const auto reopened = [&] {
        const std::string text = server.log();
        std::size_t count = 0;
        for (std::size_t at = 0; (at = text.find("reopened the access log", at)) != std::string::npos; ++at) ++count;
        return count;
    };
    ASSERT_TRUE(eventually([&] { return reopened() == 2; }, 5s)) << server.log();  // both workers
    for (int i = 0; i < 20; ++i) ASSERT_EQ(fetch(server.port(), "/csp/hello?after=" + std::to_string(i))->status, 200);
    ASSERT_EQ(server.stop(), 0);
    const auto old_lines = lines_of(dir / "access.log.1"), new_lines = lines_of(log);
    EXPECT_EQ(old_lines.size() + new_lines.size(), 40u);  // none lost
    for (const std::string& line : old_lines) EXPECT_EQ(line.find("after="), std::string::npos) << line;
    std::size_t after = 0;
    for (const std::string& line : new_lines) after += line.find("after=") != std::string::npos;
    EXPECT_EQ(after, 20u);
}

}  // namespace
}  // namespace cspd::test
