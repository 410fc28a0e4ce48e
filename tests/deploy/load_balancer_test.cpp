// Several cspd behind a load balancer, the way users run them: real nginx (Debian's nginx-light,
// in the foreground with a prefix of its own) balances three cspd instances while wrk loads
// through it, on loopback and for a few seconds at a time. Each test checks what an operator
// relies on:
//  - a handler rolled out instance by instance (atomic rename) fails no request, and at the end
//    every instance serves the new version, as its /-/status fnv1a64 and `cspd hash` agree;
//  - an instance drained with SIGTERM and started again fails no request;
//  - an instance killed with -9 loses at most the requests in flight on it.
#include "http_client.hpp"
#include "nginx.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <regex>
#include <thread>

extern char** environ;

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

constexpr int kConnections = 16;  // wrk's; also the most requests one instance can have in flight

std::string run(const std::string& command) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    if (!pipe) return out;
    std::array<char, 4096> chunk;
    while (std::size_t n = std::fread(chunk.data(), 1, chunk.size(), pipe.get())) out.append(chunk.data(), n);
    return out;
}

/// nginx balancing `upstreams` with the retries an operator would set.
std::unique_ptr<Nginx> balancer(const std::vector<unsigned short>& upstreams) {
    std::string block = "  upstream cspd {\n";
    for (unsigned short port : upstreams)
        block += "    server 127.0.0.1:" + std::to_string(port) + " max_fails=1 fail_timeout=1s;\n";
    block += "    keepalive 32;\n  }\n  server {\n    listen 127.0.0.1:@PORT@;\n    location / {\n"
             "      proxy_pass http://cspd;\n      proxy_http_version 1.1;\n"
             "      proxy_set_header Connection \"\";\n"
             "      proxy_next_upstream error timeout http_502 http_503 http_504;\n"
             "      proxy_next_upstream_tries 3;\n      proxy_connect_timeout 1s;\n"
             "      proxy_read_timeout 5s;\n    }\n  }\n";
    return std::make_unique<Nginx>(block);
}

struct LoadResult {
    long requests = 0, failures = 0;
    std::string output;
};

/// wrk through nginx for `seconds`: every request that did not get a 2xx or 3xx is a failure,
/// and so is every socket error (connect, read, write, timeout).
std::future<LoadResult> load(unsigned short port, int seconds) {
    return std::async(std::launch::async, [port, seconds] {
        LoadResult result;
        result.output = run("wrk -t1 -c" + std::to_string(kConnections) + " -d" + std::to_string(seconds) +
                            "s http://127.0.0.1:" + std::to_string(port) + "/csp/versioned 2>&1");
        std::smatch m;
        if (std::regex_search(result.output, m, std::regex(R"((\d+) requests in)"))) result.requests = std::stol(m[1]);
        if (std::regex_search(result.output, m,
                              std::regex(R"(Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+))")))
            for (int i = 1; i <= 4; ++i) result.failures += std::stol(m[i]);
        if (std::regex_search(result.output, m, std::regex(R"(Non-2xx or 3xx responses: (\d+))")))
            result.failures += std::stol(m[1]);
        return result;
    });
}

class LoadBalancerTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 3; ++i) {
            instances.push_back(std::make_unique<TestServer>(
                std::vector<std::string>{"--port", std::to_string(free_port()), "--workers", "1", "--threads", "1",
                                         "--log-level", "info"},
                false));
            install_by_rename(test_handler("v1/versioned.so"), instances.back()->handlers() / "versioned.so");
            instances.back()->start();
            ports.push_back(instances.back()->port());
        }
        for (auto port : ports) ASSERT_TRUE(serves(port, "version 1"));
        nginx = balancer(ports);
        auto through = fetch(nginx->port(), "/csp/versioned");
        ASSERT_TRUE(through);
        ASSERT_EQ(through->body, "version 1");
    }

    static bool serves(unsigned short port, const std::string& body, std::chrono::milliseconds within = 5s) {
        return eventually([&] {
            auto r = fetch(port, "/csp/versioned");
            return r && r->status == 200 && r->body == body;
        }, within);
    }

    /// The fnv1a64 this instance's /-/status gives the live versioned handler ("" if none).
    static std::string live_hash(unsigned short port) {
        auto page = fetch(port, "/-/status");
        if (!page || page->status != 200) return "";
        const nlohmann::json status = nlohmann::json::parse(page->body);
        for (const auto& h : status.at("handlers"))
            if (h.at("name").get<std::string>() == "versioned" && h.contains("version"))
                return h.at("version").at("fnv1a64").get<std::string>();
        return "";
    }

    void expect_no_failures(const LoadResult& result) {
        EXPECT_GT(result.requests, 1000) << result.output;
        EXPECT_EQ(result.failures, 0) << result.output << "\nnginx's error log:\n" << nginx->error_log();
    }

    std::vector<std::unique_ptr<TestServer>> instances;
    std::vector<unsigned short> ports;
    std::unique_ptr<Nginx> nginx;
};

TEST_F(LoadBalancerTest, RollingAHandlerOutInstanceByInstanceFailsNoRequest) {
    const std::filesystem::path v2 = test_handler("v2/versioned.so");
    const std::string hash_line = run(std::string(CSPD_BINARY) + " hash " + v2.string());
    const std::string v2_hash = hash_line.substr(0, hash_line.find(' '));
    ASSERT_EQ(v2_hash.size(), 16u) << hash_line;

    auto running = load(nginx->port(), 6);
    std::this_thread::sleep_for(1s);
    for (std::size_t i = 0; i < instances.size(); ++i) {
        install_by_rename(v2, instances[i]->handlers() / "versioned.so");
        EXPECT_TRUE(eventually([&] { return live_hash(ports[i]) == v2_hash; }, 5s)) << "instance " << i;
        std::this_thread::sleep_for(1s);  // one at a time, under load
    }
    const LoadResult result = running.get();
    expect_no_failures(result);
    for (std::size_t i = 0; i < instances.size(); ++i) {
        EXPECT_TRUE(serves(ports[i], "version 2", 1s)) << "instance " << i;
        EXPECT_EQ(live_hash(ports[i]), v2_hash) << "instance " << i;
    }
    std::printf("rollout under load: %ld requests through nginx, %ld failed\n", result.requests, result.failures);
}

TEST_F(LoadBalancerTest, AnInstanceDrainedWithSigtermAndStartedAgainFailsNoRequest) {
    auto running = load(nginx->port(), 6);
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(instances[1]->stop(), 0);  // SIGTERM: it drains and exits 0
    std::this_thread::sleep_for(1s);     // nginx meanwhile sends everything to the other two
    instances[1]->start();
    EXPECT_TRUE(serves(ports[1], "version 1"));
    const LoadResult result = running.get();
    expect_no_failures(result);
    std::printf("drain and restart under load: %ld requests through nginx, %ld failed\n", result.requests,
                result.failures);
}

TEST_F(LoadBalancerTest, AnInstanceKilledWithSigkillLosesAtMostItsRequestsInFlight) {
    auto running = load(nginx->port(), 5);
    std::this_thread::sleep_for(1500ms);
    const pid_t master = instances[2]->pid();
    ::kill(-master, SIGKILL);  // the master and its worker: their whole process group
    ::waitpid(master, nullptr, 0);
    const LoadResult result = running.get();
    EXPECT_GT(result.requests, 1000) << result.output;
    EXPECT_LE(result.failures, kConnections) << result.output << "\nnginx's error log:\n" << nginx->error_log();
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(serves(ports[i], "version 1", 1s)) << "instance " << i;
    std::printf("kill -9 under load: %ld requests through nginx, %ld failed (at most %d allowed)\n", result.requests,
                result.failures, kConnections);
}

}  // namespace
}  // namespace cspd::test
