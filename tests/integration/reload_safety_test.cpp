// Hot reload that never waits on a bad handler, and never loses the last good version (issue
// 24): a version being vetted holds up nothing else -- not another file, not a delete, not a
// stop -- and shows in /-/status meanwhile; a worker that starts while the file is junk serves
// what the server kept; a version quarantined for crashing gives way to the one it replaced.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// The handler's /-/status entry, from one look (callers poll with their own deadlines).
nlohmann::json handler_now(const TestServer& server, const std::string& name) {
    const auto response = fetch(server.port(), "/-/status");
    if (!response || response->status != 200) return nlohmann::json::object();
    const nlohmann::json all = nlohmann::json::parse(response->body);  // kept: the loop reads into it
    for (const auto& h : all.at("handlers"))
        if (h.at("name") == name) return h;
    return nlohmann::json::object();
}

int status_of(const TestServer& server, const std::string& target) {
    const auto response = fetch(server.port(), target);
    return response ? response->status : 0;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

class ReloadSafety : public ::testing::Test {
protected:
    // The default --init-timeout (10 s): a hanging init is vetted for that long.
    TestServer server{{"--workers", "2"}};

    void drop(const std::string& file, const std::string& as) {
        install_by_rename(test_handler(file), server.handlers() / as);
    }
    /// Both workers answer `target` with `status` (asked a few times: a request meets either).
    bool answers(const std::string& target, int status, std::chrono::milliseconds within) {
        return eventually(
            [&] {
                for (int i = 0; i < 6; ++i)
                    if (status_of(server, target) != status) return false;
                return true;
            },
            within);
    }
};

TEST_F(ReloadSafety, AHangingInitHoldsUpNoOtherFileNoDeleteAndNoStop) {
    drop("v1/versioned.so", "versioned.so");
    ASSERT_TRUE(answers("/csp/versioned", 200, 10s));

    drop("init_hang.so", "init_hang.so");
    nlohmann::json h;
    ASSERT_TRUE(eventually([&] { return (h = handler_now(server, "init_hang")).value("state", "") == "vetting"; }, 5s))
        << h.dump() << "\n" << server.log();
    EXPECT_GT(h.value("vetting_since_unix_ms", std::int64_t{0}), 0);

    // A good handler dropped after it is served at once, by both workers.
    auto start = Clock::now();
    drop("echo.so", "echo.so");
    EXPECT_TRUE(answers("/csp/echo", 200, 1500ms)) << server.log();
    const double good_served = seconds_since(start);

    // A delete takes effect at once.
    start = Clock::now();
    std::filesystem::remove(server.handlers() / "versioned.so");
    EXPECT_TRUE(answers("/csp/versioned", 404, 1500ms)) << server.log();
    const double deleted = seconds_since(start);

    // Still being vetted: these did not wait for it.
    EXPECT_EQ(handler_now(server, "init_hang").value("state", ""), "vetting");
    EXPECT_EQ(status_of(server, "/csp/init_hang"), 404);

    // A stop drains at once (the vetting processes are killed, not waited for).
    start = Clock::now();
    EXPECT_EQ(server.stop(5s), 0) << server.log();
    const double stopped = seconds_since(start);
    EXPECT_LT(stopped, 3.0) << server.log();
    std::printf("good handler served after %.3f s, delete after %.3f s, stopped after %.3f s\n", good_served, deleted,
                stopped);
}

TEST_F(ReloadSafety, ANewerFileSupersedesOneStillBeingVetted) {
    drop("init_hang.so", "swap.so");
    ASSERT_TRUE(eventually([&] { return handler_now(server, "swap").value("state", "") == "vetting"; }, 5s))
        << server.log();
    const auto start = Clock::now();
    drop("echo.so", "swap.so");
    EXPECT_TRUE(answers("/csp/swap", 200, 1500ms)) << server.log();
    std::printf("newer file served after %.3f s\n", seconds_since(start));
    EXPECT_EQ(handler_now(server, "swap").value("state", ""), "live");
    EXPECT_FALSE(server.wait_for_log("did not return in init", 0ms)) << server.log();
}

TEST_F(ReloadSafety, AFileDeletedWhileBeingVettedLeavesNothingBehind) {
    drop("init_hang.so", "gone.so");
    ASSERT_TRUE(eventually([&] { return handler_now(server, "gone").value("state", "") == "vetting"; }, 5s))
        << server.log();
    std::filesystem::remove(server.handlers() / "gone.so");
    nlohmann::json h;
    EXPECT_TRUE(eventually([&] { return (h = handler_now(server, "gone")).value("state", "") == "removed"; }, 1500ms))
        << h.dump();
    EXPECT_EQ(status_of(server, "/csp/gone"), 404);
}

TEST_F(ReloadSafety, TwoWorkersVetANewVersionOnce) {
    drop("echo.so", "echo.so");
    ASSERT_TRUE(answers("/csp/echo", 200, 10s));
    ASSERT_TRUE(eventually([&] { return handler_now(server, "echo").value("loads", 0) >= 2; }, 5s));
    const std::string log = server.log();
    std::size_t vetted = 0, shared = 0;
    for (std::size_t at = log.find("handler echo: vetted in"); at != std::string::npos;
         at = log.find("handler echo: vetted in", at + 1))
        ++vetted;
    for (std::size_t at = log.find("handler echo: passed by another worker's vetting"); at != std::string::npos;
         at = log.find("handler echo: passed by another worker's vetting", at + 1))
        ++shared;
    EXPECT_EQ(vetted, 1u) << log;
    EXPECT_EQ(shared, 1u) << log;
}

// --- the last good version survives a worker restart ----------------------------------------

double restarts_now(const TestServer& server) {
    const auto response = fetch(server.port(), "/-/status");
    if (!response || response->status != 200) return -1;
    return nlohmann::json::parse(response->body).at("worker_restarts").get<double>();
}

/// A worker killed with SIGKILL (no blame, no crash count) and its replacement serving.
::testing::AssertionResult kill_a_worker(TestServer& server) {
    const double before = restarts_now(server);
    const std::vector<pid_t> pids = server.worker_pids();
    if (pids.empty()) return ::testing::AssertionFailure() << "no worker";
    ::kill(pids.front(), SIGKILL);
    if (!eventually([&] { return restarts_now(server) > before; }, 5s))
        return ::testing::AssertionFailure() << "not replaced:\n" << server.log();
    if (!server.wait_for_log("replaced: serving", 10s)) return ::testing::AssertionFailure() << server.log();
    return ::testing::AssertionSuccess();
}

/// Asks `n` times; how many answers had `body` (a 200 with it), and what else came.
std::pair<int, std::string> answers_with(const TestServer& server, const std::string& target, const std::string& body,
                                         int n) {
    int right = 0;
    std::string other;
    for (int i = 0; i < n; ++i) {
        const auto response = fetch(server.port(), target);
        if (response && response->status == 200 && response->body == body)
            ++right;
        else
            other += (response ? std::to_string(response->status) + " " + response->body : std::string("no answer")) + "; ";
    }
    return {right, other};
}

TEST_F(ReloadSafety, AWorkerThatStartsWhileTheFileIsJunkServesTheLastGoodVersion) {
    drop("v1/versioned.so", "versioned.so");
    ASSERT_TRUE(answers("/csp/versioned", 200, 10s));
    // Junk over it: refused, and version 1 keeps serving in both workers.
    const auto junk = server.handlers() / ".junk";
    std::ofstream(junk) << std::string(8192, 'x');
    std::filesystem::rename(junk, server.handlers() / "versioned.so");
    ASSERT_TRUE(server.wait_for_log("handler versioned: refused", 5s)) << server.log();

    ASSERT_TRUE(kill_a_worker(server));
    // The new worker read the folder, found junk, and serves the version the server kept.
    const auto [right, other] = answers_with(server, "/csp/versioned", "version 1", 40);
    EXPECT_EQ(right, 40) << other << "\n" << server.log();
    EXPECT_TRUE(server.wait_for_log("the version the server kept from before this worker started")) << server.log();
    const nlohmann::json h = handler_now(server, "versioned");
    EXPECT_EQ(h.value("state", ""), "live") << h.dump();
}

TEST_F(ReloadSafety, StatusNeverSaysLiveForANameAWorkerAnswers404To) {
    drop("v1/versioned.so", "versioned.so");
    ASSERT_TRUE(answers("/csp/versioned", 200, 10s));
    std::filesystem::remove(server.handlers() / "versioned.so");
    ASSERT_TRUE(answers("/csp/versioned", 404, 5s));
    ASSERT_TRUE(kill_a_worker(server));
    EXPECT_EQ(handler_now(server, "versioned").value("state", ""), "removed");
}

// --- a quarantined version rolls back to the one it replaced ---------------------------------

class Rollback : public ::testing::Test {
protected:
    explicit Rollback(std::vector<std::string> extra = {})
        : server([&] {
              std::vector<std::string> args{"--workers", "2", "--quarantine-crashes", "3"};
              args.insert(args.end(), extra.begin(), extra.end());
              return args;
          }()) {}

    /// v1 serves in both workers, then v2 -- which crashes on every call -- replaces it everywhere.
    void serve_v1_then_a_crashing_v2() {
        install_by_rename(test_handler("crash.so"), server.handlers() / "crash.so");
        ASSERT_TRUE(eventually([&] { return answers_with(server, "/csp/crash", "crash v1", 6).first == 6; }, 10s));
        install_by_rename(test_handler("always/crash.so"), server.handlers() / "crash.so");
        ASSERT_TRUE(eventually([&] { return handler_now(server, "crash").value("loads", 0) >= 4; }, 10s))
            << server.log();
    }

    /// Asks until an answer comes that is not a crash; counts the crashes (the dying worker's 500,
    /// or no answer) and the 503s.
    struct Outcome {
        int crashed = 0, unavailable = 0;
        std::string answer;
    };
    Outcome ask_until_answered() {
        Outcome outcome;
        for (int i = 0; i < 20; ++i) {
            const auto response = fetch(server.port(), "/csp/crash");
            if (!response || response->status == 500) {
                ++outcome.crashed;
                std::this_thread::sleep_for(50ms);  // the master reaps, counts and restarts
                continue;
            }
            if (response->status == 503) {
                ++outcome.unavailable;
                continue;
            }
            outcome.answer = std::to_string(response->status) + " " + response->body;
            break;
        }
        return outcome;
    }

    TestServer server;
};

TEST_F(Rollback, AQuarantinedVersionGivesWayToTheOneItReplacedEverywhere) {
    serve_v1_then_a_crashing_v2();
    const Outcome outcome = ask_until_answered();
    EXPECT_EQ(outcome.answer, "200 crash v1") << server.log();
    EXPECT_GE(outcome.crashed, 3);
    EXPECT_LE(outcome.crashed, 4);  // one more may reach the other worker before the master reaps the third
    EXPECT_EQ(outcome.unavailable, 0) << "503s beyond the crashing requests";
    std::printf("rollback after %d crashed requests, %d answered 503\n", outcome.crashed, outcome.unavailable);
    EXPECT_TRUE(server.wait_for_log("rolled back: the version it replaced")) << server.log();

    // Every worker, and one that starts now, serves v1.
    auto [right, other] = answers_with(server, "/csp/crash", "crash v1", 20);
    EXPECT_EQ(right, 20) << other;
    ASSERT_TRUE(kill_a_worker(server));
    std::tie(right, other) = answers_with(server, "/csp/crash", "crash v1", 20);
    EXPECT_EQ(right, 20) << other << "\n" << server.log();

    nlohmann::json h = handler_now(server, "crash");
    EXPECT_EQ(h.value("state", ""), "rolled back") << h.dump();
    ASSERT_TRUE(h.contains("rolled_back")) << h.dump();
    EXPECT_NE(h["rolled_back"]["from"]["fnv1a64"], h["rolled_back"]["to"]["fnv1a64"]);
    EXPECT_EQ(h["rolled_back"]["to"]["fnv1a64"], h["version"]["fnv1a64"]);
    EXPECT_NE(h["rolled_back"].value("why", "").find("crashed"), std::string::npos) << h.dump();
    EXPECT_EQ(h.value("rollbacks", 0), 1);
    const std::string metrics = fetch(server.port(), "/metrics").value_or(HttpResponse{}).body;
    EXPECT_NE(metrics.find("cspd_handler_rollbacks_total{handler=\"crash\"} 1"), std::string::npos);

    // A newer file is tried as usual.
    install_by_rename(test_handler("v2/crash.so"), server.handlers() / "crash.so");
    EXPECT_TRUE(eventually([&] { return answers_with(server, "/csp/crash", "crash v2", 6).first == 6; }, 10s))
        << server.log();
    EXPECT_TRUE(eventually([&] { return handler_now(server, "crash").value("state", "") == "live"; }, 5s));
}

class ShortWindow : public Rollback {
protected:
    // Short, so the replaced version is let go within the test; long enough that three crashes
    // fit in it with two worker restarts between them (about half a second each under ASan).
    ShortWindow() : Rollback({"--quarantine-window", "2"}) {}
};

TEST_F(ShortWindow, TheReplacedVersionIsLetGoOnceTheNewOneServedTheWindow) {
    install_by_rename(test_handler("crash.so"), server.handlers() / "crash.so");
    ASSERT_TRUE(eventually([&] { return answers_with(server, "/csp/crash", "crash v1", 6).first == 6; }, 10s));
    const std::size_t one_version = server.handler_mappings();
    install_by_rename(test_handler("v2/crash.so"), server.handlers() / "crash.so");
    ASSERT_TRUE(eventually([&] { return answers_with(server, "/csp/crash", "crash v2", 6).first == 6; }, 10s));
    // v1 stays loaded for a rollback: more mappings, for a while.
    EXPECT_GT(server.handler_mappings(), one_version);
    EXPECT_TRUE(eventually([&] { return server.handler_mappings() <= one_version; }, 5s))
        << server.handler_mappings() << " mappings; one version has " << one_version << "\n" << server.log();
    // v2 now crashes 3 times: nothing to roll back to any more, so 503.
    for (int i = 0; i < 3; ++i) {
        const auto response = fetch(server.port(), "/csp/crash?how=segv");
        EXPECT_TRUE(!response || response->status == 500);
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(eventually([&] { return fetch(server.port(), "/csp/crash").value_or(HttpResponse{}).status == 503; }, 5s))
        << server.log();
}

class NoRollback : public Rollback {
protected:
    NoRollback() : Rollback({"--no-rollback"}) {}
};

TEST_F(NoRollback, AQuarantinedVersionAnswers503) {
    serve_v1_then_a_crashing_v2();
    const Outcome outcome = ask_until_answered();
    EXPECT_EQ(outcome.answer, "") << server.log();
    EXPECT_GE(outcome.crashed, 3);
    EXPECT_GT(outcome.unavailable, 0);
    EXPECT_EQ(handler_now(server, "crash").value("state", ""), "quarantined");
    std::printf("--no-rollback: %d crashed requests, then 503\n", outcome.crashed);
}

}  // namespace
}  // namespace cspd::test
