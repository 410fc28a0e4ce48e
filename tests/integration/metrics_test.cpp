// GET /metrics and /-/status against the real binary with two worker processes:
// the text must parse (promtool, Prometheus's own checker, and a strict reader here),
// and the counters must add up to exactly what was sent, over both workers.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// Every sample of an exposition, keyed "name{labels}"; fails the test on a malformed line.
std::map<std::string, double> parse_exposition(const std::string& text) {
    std::map<std::string, double> samples;
    std::map<std::string, std::string> types;
    const std::regex type_line(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
    const std::regex sample_line(
        R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (-?[0-9.eE+-]+|\+Inf|NaN))");
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::smatch m;
        if (line.rfind("# HELP ", 0) == 0) continue;
        if (std::regex_match(line, m, type_line)) {
            EXPECT_EQ(types.count(m[1]), 0u) << "TYPE twice: " << line;
            types[m[1]] = m[2];
            continue;
        }
        if (!std::regex_match(line, m, sample_line)) {
            ADD_FAILURE() << "not a Prometheus sample line: '" << line << "'";
            continue;
        }
        std::string family = m[1];
        for (const char* suffix : {"_bucket", "_sum", "_count"})
            if (!types.count(family) && family.size() > std::strlen(suffix) &&
                family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
                family.resize(family.size() - std::strlen(suffix));
        EXPECT_TRUE(types.count(family)) << "sample before its # TYPE: " << line;
        const std::string key = std::string(m[1]) + std::string(m[2]);
        EXPECT_EQ(samples.count(key), 0u) << "sample twice: " << line;
        samples[key] = std::stod(line.substr(line.rfind(' ') + 1));
    }
    return samples;
}

std::uint64_t fnv1a64(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::uint64_t hash = 14695981039346656037ull;
    for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) {
        hash ^= static_cast<unsigned char>(*it);
        hash *= 1099511628211ull;
    }
    return hash;
}

TEST(Metrics, ParseAsPrometheusTextAndCountExactlyWhatWasSentAcrossWorkers) {
    TestServer server({"--workers", "2"}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    std::filesystem::copy_file(shipped_handler("xpng.so"), server.handlers() / "xpng.so");
    std::filesystem::copy_file(test_handler("status.so"), server.handlers() / "status.so");
    std::filesystem::copy_file(test_handler("throwing.so"), server.handlers() / "throwing.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return server.worker_pids().size() == 2; }));

    // New connections: the kernel spreads them over both workers.
    for (int i = 0; i < 30; ++i) ASSERT_EQ(fetch(server.port(), "/csp/hello")->status, 200);
    for (int i = 0; i < 20; ++i) ASSERT_EQ(fetch(server.port(), "/csp/xpng")->status, 200);
    for (int i = 0; i < 7; ++i) ASSERT_EQ(fetch(server.port(), "/csp/missing")->status, 404);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(fetch(server.port(), "/csp/status?code=503")->status, 503);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(fetch(server.port(), "/csp/throwing")->status, 500);

    auto metrics = fetch(server.port(), "/metrics");
    ASSERT_TRUE(metrics);
    ASSERT_EQ(metrics->status, 200);
    EXPECT_EQ(metrics->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");

    // Prometheus's own checker.
    TempDir dir;
    const auto file = dir.path() / "metrics.txt";
    std::ofstream(file) << metrics->body;
    const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string verdict;
    char chunk[1024];
    while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) verdict.append(chunk, n);
    const int status = ::pclose(pipe);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 127) << "promtool is missing: .ci/setup installs it";
    EXPECT_EQ(WEXITSTATUS(status), 0) << verdict;

    const auto samples = parse_exposition(metrics->body);
    EXPECT_EQ(samples.at(R"(cspd_handler_requests_total{handler="hello",code="2xx"})"), 30);
    EXPECT_EQ(samples.at(R"(cspd_handler_requests_total{handler="xpng",code="2xx"})"), 20);
    EXPECT_EQ(samples.at(R"(cspd_handler_requests_total{handler="status",code="5xx"})"), 4);
    EXPECT_EQ(samples.at(R"(cspd_requests_total{code="2xx"})"), 50);
    EXPECT_EQ(samples.at(R"(cspd_requests_total{code="4xx"})"), 7);
    EXPECT_EQ(samples.at(R"(cspd_requests_total{code="5xx"})"), 7);
    EXPECT_EQ(samples.at(R"(cspd_handler_errors_total{handler="throwing"})"), 3);
    EXPECT_EQ(samples.at(R"(cspd_handler_requests_total{handler="throwing",code="5xx"})"), 3);
    EXPECT_EQ(samples.at(R"(cspd_handler_errors_total{handler="status"})"), 0) << "a 503 it chose is no error";
    EXPECT_EQ(samples.at(R"(cspd_handler_duration_seconds_count{handler="hello"})"), 30);
    EXPECT_EQ(samples.at(R"(cspd_handler_duration_seconds_bucket{handler="hello",le="+Inf"})"), 30);
    EXPECT_GT(samples.at(R"(cspd_handler_duration_seconds_sum{handler="hello"})"), 0);
    EXPECT_EQ(samples.at(R"(cspd_handler_loads_total{handler="hello"})"), 2) << "one load per worker";
    EXPECT_EQ(samples.at(R"(cspd_handler_crashes_total{handler="hello"})"), 0);
    EXPECT_EQ(samples.at("cspd_event_loops"), 2);
    EXPECT_EQ(samples.at("cspd_worker_restarts_total"), 0);
    EXPECT_GE(samples.at("cspd_connections_total"), 65);
    // Only the /metrics request's own connection stays; the others close as their fetch ends.
    EXPECT_TRUE(eventually(
        [&] { return parse_exposition(fetch(server.port(), "/metrics")->body).at("cspd_open_connections") == 1; }));
    // Buckets are cumulative.
    double previous = 0;
    for (const char* le :
         {"1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "+Inf"}) {
        const double value =
            samples.at(std::string(R"(cspd_handler_duration_seconds_bucket{handler="xpng",le=")") + le + "\"}");
        EXPECT_GE(value, previous) << le;
        previous = value;
    }
    EXPECT_EQ(previous, 20);

    // /-/status says the same, with versions and workers.
    auto status_page = fetch(server.port(), "/-/status");
    ASSERT_TRUE(status_page);
    EXPECT_EQ(status_page->header("content-type"), "application/json");
    const auto doc = nlohmann::json::parse(status_page->body);
    std::map<std::string, nlohmann::json> handlers;
    for (const auto& h : doc.at("handlers")) handlers[h.at("name").get<std::string>()] = h;
    ASSERT_EQ(handlers.size(), 4u);
    EXPECT_EQ(handlers["throwing"].at("errors"), 3);
    EXPECT_EQ(handlers["hello"].at("state"), "live");
    EXPECT_EQ(handlers["hello"].at("requests"), 30);
    EXPECT_EQ(handlers["status"].at("server_errors"), 4);
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016" PRIx64, fnv1a64(shipped_handler("hello.so")));
    EXPECT_EQ(handlers["hello"].at("version").at("fnv1a64"), hash);
    EXPECT_EQ(handlers["hello"].at("version").at("size"), std::filesystem::file_size(shipped_handler("hello.so")));
    std::set<pid_t> pids;
    for (const auto& w : doc.at("workers")) pids.insert(w.at("pid").get<pid_t>());
    const auto workers = server.worker_pids();
    EXPECT_EQ(pids, std::set<pid_t>(workers.begin(), workers.end()));
    EXPECT_EQ(server.stop(), 0);
}

TEST(Metrics, ReportsRefusedHandlers) {
    TestServer server;
    std::filesystem::copy_file(test_handler("bad_abi.so"), server.handlers() / "bad_abi.so");
    ASSERT_TRUE(server.wait_for_log("handler bad_abi: refused"));
    ASSERT_TRUE(eventually([&] {
        auto r = fetch(server.port(), "/-/status");
        return r && r->body.find("\"refused\"") != std::string::npos;
    })) << fetch(server.port(), "/-/status")->body;
    const auto doc = nlohmann::json::parse(fetch(server.port(), "/-/status")->body);
    ASSERT_EQ(doc.at("handlers").size(), 1u);
    EXPECT_NE(doc["handlers"][0].at("last_refusal").get<std::string>().find("ABI"), std::string::npos) << doc.dump(2);
    const auto samples = parse_exposition(fetch(server.port(), "/metrics")->body);
    EXPECT_EQ(samples.at(R"(cspd_handler_refusals_total{handler="bad_abi"})"), 1);
}

TEST(Metrics, CanBeServedOnAnotherAddressOnly) {
    TestServer server({"--workers", "2", "--status-listen", "127.0.0.1:0"}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    const unsigned short status_port = server.status_port();
    ASSERT_NE(status_port, 0) << server.log();
    ASSERT_NE(status_port, server.port());
    for (int i = 0; i < 5; ++i) ASSERT_EQ(fetch(server.port(), "/csp/hello")->status, 200);
    // The status socket is shared: whichever worker takes a connection answers for all.
    for (int i = 0; i < 6; ++i) {
        auto metrics = fetch(status_port, "/metrics");
        ASSERT_TRUE(metrics);
        ASSERT_EQ(metrics->status, 200);
        EXPECT_EQ(parse_exposition(metrics->body).at(R"(cspd_handler_requests_total{handler="hello",code="2xx"})"), 5);
        EXPECT_EQ(fetch(status_port, "/-/status")->status, 200);
    }
    EXPECT_EQ(fetch(server.port(), "/metrics")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/-/status")->status, 404);
    // And the status address serves nothing but the operators' paths.
    EXPECT_EQ(fetch(status_port, "/csp/hello")->status, 404);
    EXPECT_EQ(fetch(status_port, "/")->status, 404);
    EXPECT_EQ(fetch(status_port, "/-/healthy")->status, 200);
    EXPECT_EQ(server.stop(), 0);
}

TEST(Metrics, ThePublicStatusNamesRefusedFilesButNotWhereTheyAre) {
    // dlopen's reason names the private copy's path (under /tmp): the public port shows the file
    // and the reason only; the status address, for operators, shows it whole.
    TestServer server({"--workers", "1", "--status-listen", "127.0.0.1:0"}, false);
    std::filesystem::copy_file(test_handler("unresolved.so"), server.handlers() / "unresolved.so");
    server.start();
    const unsigned short status_port = server.status_port();
    ASSERT_NE(status_port, 0) << server.log();
    const auto refusal = [](unsigned short port) -> std::string {
        const auto r = fetch(port, "/-/status");
        if (!r || r->status != 200) return "";
        const auto doc = nlohmann::json::parse(r->body);  // kept: the loop walks a part of it
        for (const auto& h : doc.at("handlers"))
            if (h.at("name") == "unresolved" && h.contains("last_refusal")) return h.at("last_refusal");
        return "";
    };
    ASSERT_TRUE(eventually([&] { return !refusal(status_port).empty(); }, 5s));
    const std::string whole = refusal(status_port);
    EXPECT_NE(whole.find("undefined symbol: cspd_test_no_such_function"), std::string::npos) << whole;
    EXPECT_NE(whole.find("/"), std::string::npos) << whole;  // the operator sees where
    TestServer plain({"--workers", "1"}, false);
    std::filesystem::copy_file(test_handler("unresolved.so"), plain.handlers() / "unresolved.so");
    plain.start();
    ASSERT_TRUE(eventually([&] { return !refusal(plain.port()).empty(); }, 5s));
    const std::string shown = refusal(plain.port());
    EXPECT_NE(shown.find("undefined symbol: cspd_test_no_such_function"), std::string::npos) << shown;
    EXPECT_NE(shown.find("unresolved."), std::string::npos) << shown;
    EXPECT_EQ(shown.find('/'), std::string::npos) << shown;
    EXPECT_EQ(shown.find("tmp"), std::string::npos) << shown;
    EXPECT_EQ(fetch(plain.port(), "/-/status")->body.find("/tmp/"), std::string::npos);
}

TEST(Metrics, NamesAddedAndRemovedAreRecycledSoANewOneIsStillCounted) {
    // More names come and go than a loop has counters for (--max-handlers 128): a removed one's
    // counters are given to the next name, so a new handler always shows in /-/status and /metrics.
    TestServer server({"--workers", "1", "--max-handlers", "128"});
    for (int i = 0; i < 140; ++i) {
        const std::string name = "n" + std::to_string(i);
        install_by_rename(shipped_handler("hello.so"), server.handlers() / (name + ".so"));
        ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/" + name).value_or(HttpResponse{}).status == 200; }, 5s)) << name;
        std::filesystem::remove(server.handlers() / (name + ".so"));
        ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/" + name).value_or(HttpResponse{}).status == 404; }, 5s)) << name;
    }
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "fresh.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/fresh").value_or(HttpResponse{}).status == 200; }, 5s));
    const auto doc = nlohmann::json::parse(fetch(server.port(), "/-/status")->body);
    bool listed = false;
    for (const auto& h : doc.at("handlers")) listed |= h.at("name") == "fresh" && h.at("state") == "live";
    EXPECT_TRUE(listed) << doc.dump(1);
    const auto samples = parse_exposition(fetch(server.port(), "/metrics")->body);
    EXPECT_EQ(samples.at(R"(cspd_handler_requests_total{handler="fresh",code="2xx"})"), 1);
    EXPECT_EQ(server.log().find("not in /-/status"), std::string::npos);
}

TEST(Metrics, NamesPastMaxHandlersAreServedUncountedAndTheLogSaysWhichFlagToRaise) {
    TestServer server({"--workers", "1", "--max-handlers", "2"});
    for (const std::string name : {"a", "b", "c"}) {
        install_by_rename(shipped_handler("hello.so"), server.handlers() / (name + ".so"));
        ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/" + name).value_or(HttpResponse{}).status == 200; }, 5s)) << name;
    }
    ASSERT_TRUE(server.wait_for_log("--max-handlers"));
    // Which of the three came last is the watcher's order; the two counted are in /-/status.
    const auto doc = nlohmann::json::parse(fetch(server.port(), "/-/status")->body);
    EXPECT_EQ(doc.at("handlers").size(), 2u) << doc.dump(1);
    const std::string log = server.log();
    const auto warned = log.find("served, but not in /-/status");
    ASSERT_NE(warned, std::string::npos) << log;
    const std::string uncounted = log.substr(log.rfind("handler ", warned) + 8, 1);
    for (const auto& h : doc.at("handlers")) EXPECT_NE(h.at("name"), uncounted);
    EXPECT_EQ(fetch(server.port(), "/csp/" + uncounted)->status, 200);  // served all the same
}

TEST(Metrics, CanBeTurnedOff) {
    TestServer server({"--no-status"});
    EXPECT_EQ(fetch(server.port(), "/metrics")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/-/status")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/-/healthy")->status, 200);
}

}  // namespace
}  // namespace cspd::test
