// Hot reload that never waits on a bad handler (issue 24): a version being vetted holds up
// nothing else -- not another file, not a delete, not a stop -- and shows in /-/status meanwhile.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

nlohmann::json handler_status(const TestServer& server, const std::string& name) {
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
    ASSERT_TRUE(eventually([&] { return (h = handler_status(server, "init_hang")).value("state", "") == "vetting"; }, 5s))
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
    EXPECT_EQ(handler_status(server, "init_hang").value("state", ""), "vetting");
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
    ASSERT_TRUE(eventually([&] { return handler_status(server, "swap").value("state", "") == "vetting"; }, 5s))
        << server.log();
    const auto start = Clock::now();
    drop("echo.so", "swap.so");
    EXPECT_TRUE(answers("/csp/swap", 200, 1500ms)) << server.log();
    std::printf("newer file served after %.3f s\n", seconds_since(start));
    EXPECT_EQ(handler_status(server, "swap").value("state", ""), "live");
    EXPECT_FALSE(server.wait_for_log("did not return in init", 0ms)) << server.log();
}

TEST_F(ReloadSafety, AFileDeletedWhileBeingVettedLeavesNothingBehind) {
    drop("init_hang.so", "gone.so");
    ASSERT_TRUE(eventually([&] { return handler_status(server, "gone").value("state", "") == "vetting"; }, 5s))
        << server.log();
    std::filesystem::remove(server.handlers() / "gone.so");
    nlohmann::json h;
    EXPECT_TRUE(eventually([&] { return (h = handler_status(server, "gone")).value("state", "") == "removed"; }, 1500ms))
        << h.dump();
    EXPECT_EQ(status_of(server, "/csp/gone"), 404);
}

}  // namespace
}  // namespace cspd::test
