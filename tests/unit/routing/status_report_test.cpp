// /metrics and /-/status from shared counters set up by hand: sums over slots, handler
// states, and the Prometheus text's shape.
#include "routing/status_report.hpp"
#include "routing/without_paths.hpp"

#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

namespace cspd {
namespace {

struct StatusReportTest : ::testing::Test {
    StatusReportTest() {
        stats.slot_count.store(2);
        for (unsigned s = 0; s < 2; ++s) stats.slots[s].pid.store(::getpid());
        live = handler_stats(stats.slots[0], "hello");
        live_too = handler_stats(stats.slots[1], "hello");
        refused = handler_stats(stats.slots[0], "broken");
        live->info.write(
            [](VersionInfo& v) { v.live = true, v.size = 100, v.content_hash = 0xfeed, v.loaded_unix_ms = 5; });
        live_too->info.write(
            [](VersionInfo& v) { v.live = true, v.size = 100, v.content_hash = 0xfeed, v.loaded_unix_ms = 5; });
        refused->info.write([](VersionInfo& v) { copy_text(v.refusal, sizeof v.refusal, "init returned 7"); });
        bump(live->requests[1], 30);
        bump(live_too->requests[1], 12);
        bump(live->requests[4], 2);
        bump(live->errors, 2);
        bump(live->latency[0], 42);
        bump(stats.slots[0].requests[1], 42);
        bump(stats.slots[1].requests[3], 7);
    }
    SharedStatsMapping shared = SharedStatsMapping::create(128);
    SharedStats& stats = shared.stats();
    HandlerStats *live, *live_too, *refused;
};

TEST_F(StatusReportTest, StatusSumsTheSlotsAndTellsEachHandlersState) {
    const auto status = nlohmann::json::parse(render_status(stats));
    const auto& handlers = status.at("handlers");
    auto find = [&](const std::string& name) {
        for (const auto& h : handlers)
            if (h.at("name") == name) return h;
        ADD_FAILURE() << "no handler " << name << " in " << status.dump();
        return nlohmann::json{};
    };
    const auto hello = find("hello");
    EXPECT_EQ(hello.at("state"), "live");
    EXPECT_EQ(hello.at("errors"), 2);
    EXPECT_EQ(find("broken").at("state"), "refused");
    EXPECT_NE(status.dump().find("init returned 7"), std::string::npos);
    EXPECT_NE(status.dump().find("000000000000feed"), std::string::npos);

    add_to_quarantine(stats, "hello", 100, 0xfeed);
    bool quarantined = false;
    const auto after = nlohmann::json::parse(render_status(stats));
    for (const auto& h : after.at("handlers")) quarantined |= h.at("name") == "hello" && h.at("state") == "quarantined";
    EXPECT_TRUE(quarantined);
}

TEST_F(StatusReportTest, MetricsCountEveryResponseOnceAcrossSlots) {
    const std::string metrics = render_metrics(stats);
    EXPECT_NE(metrics.find("cspd_handler_requests_total{handler=\"hello\",code=\"2xx\"} 42\n"), std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("cspd_requests_total{code=\"2xx\"} 42\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("cspd_requests_total{code=\"4xx\"} 7\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("cspd_handler_errors_total{handler=\"hello\"} 2\n"), std::string::npos) << metrics;
    // Every sample line is "name{labels} value" or "name value"; every family has HELP and TYPE.
    std::size_t samples = 0;
    for (std::size_t at = 0; at < metrics.size();) {
        const std::size_t end = metrics.find('\n', at);
        ASSERT_NE(end, std::string::npos) << "the text ends with a newline";
        const std::string line = metrics.substr(at, end - at);
        if (!line.starts_with("#")) {
            ++samples;
            EXPECT_NE(line.rfind(' '), std::string::npos) << line;
        } else {
            EXPECT_TRUE(line.starts_with("# HELP ") || line.starts_with("# TYPE ")) << line;
        }
        at = end + 1;
    }
    EXPECT_GT(samples, 10u);
}

TEST(WithoutPaths, KeepsTheFileAndTheReasonAndDropsWhereTheyAre) {
    EXPECT_EQ(without_paths("dlopen failed: /tmp/cspd-19189-Ab12Cd/undef.1.so: undefined symbol: nope"),
              "dlopen failed: undef.1.so: undefined symbol: nope");
    EXPECT_EQ(without_paths("others may write /srv/handlers/h.so (chmod o-w /srv/handlers/h.so)"),
              "others may write h.so (chmod o-w h.so)");
    EXPECT_EQ(without_paths("folder /srv/handlers/ is group-writable"), "folder handlers is group-writable");
    EXPECT_EQ(without_paths("'/a/b c.so' is not an ELF file"), "'b c.so' is not an ELF file");
    EXPECT_EQ(without_paths("ABI 3.0 is newer than this host's 2.3"), "ABI 3.0 is newer than this host's 2.3");
    EXPECT_EQ(without_paths("a/b is a path too: b"), "b is a path too: b");
    EXPECT_EQ(without_paths("init threw: cannot open [/srv/app/secret.json]: No such file"),
              "init threw: cannot open [secret.json]: No such file");
    EXPECT_EQ(without_paths("x:/srv/a.so,/srv/b.so"), "a.so,b.so");
    EXPECT_EQ(without_paths("/srv/my dir/cspd-1-x/h.so: bad"), "my h.so: bad");  // the folder's first word stays
    EXPECT_EQ(without_paths("/"), "/");
    EXPECT_EQ(without_paths(""), "");
}

}  // namespace
}  // namespace cspd
