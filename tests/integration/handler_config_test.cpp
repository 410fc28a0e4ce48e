// Init with a context and a configuration (SDK 2.2) through the real binary: the handler's name
// and worker, NAME.conf and NAME.json read at load, a changed configuration loading the handler
// again, and a configuration that cannot be used refused with the reason while the older version
// serves on.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

class HandlerConfiguration : public ::testing::Test {
protected:
    explicit HandlerConfiguration(std::vector<std::string> args = {}) : server(std::move(args), false) {}
    void start() {
        std::filesystem::copy_file(test_handler("configured.so"), server.handlers() / "configured.so");
        server.start();
    }
    /// Writes a file into the handlers folder whole (a rename), as a deployment would.
    void write(const std::string& name, const std::string& text) {
        const auto temporary = server.handlers() / (".tmp-" + name);
        std::ofstream(temporary) << text;
        std::filesystem::rename(temporary, server.handlers() / name);
    }
    std::string body() {
        auto r = fetch(server.port(), "/csp/configured");
        return r && r->status == 200 ? r->body : "(status " + std::to_string(r ? r->status : 0) + ")";
    }
    TestServer server;
};

TEST_F(HandlerConfiguration, InitIsToldItsNameAndWorkerAndSeesNoConfigurationWithoutAFile) {
    start();
    EXPECT_EQ(body(), "name=configured worker=0/1 greeting=(none) keys=");
    EXPECT_TRUE(server.wait_for_log("[init]: configured as worker 0 of 1"));
}

TEST_F(HandlerConfiguration, AConfFileIsReadAtLoadAndAChangeLoadsTheHandlerAgain) {
    write("configured.conf", "# greeting for everyone\ngreeting = hello there\n\n; more\nmode=\"  spaced  \"\n");
    start();
    EXPECT_EQ(body(), "name=configured worker=0/1 greeting=hello there keys=greeting,mode,");
    write("configured.conf", "greeting = changed\n");
    EXPECT_TRUE(eventually([&] { return body() == "name=configured worker=0/1 greeting=changed keys=greeting,"; }, 5s))
        << body();
}

TEST_F(HandlerConfiguration, AJsonFileGivesDottedKeys) {
    write("configured.json", R"({"greeting": "from json", "db": {"host": "localhost", "port": 5432}, "on": true})");
    start();
    EXPECT_EQ(body(), "name=configured worker=0/1 greeting=from json keys=db.host,db.port,greeting,on,");
}

TEST_F(HandlerConfiguration, AConfigurationThatCannotBeUsedIsRefusedAndTheOlderVersionServesOn) {
    write("configured.conf", "greeting = first\n");
    start();
    const std::string first = "name=configured worker=0/1 greeting=first keys=greeting,";
    EXPECT_EQ(body(), first);
    write("configured.conf", "greeting = second\nthis line has no equals sign\n");
    EXPECT_TRUE(server.wait_for_log("configuration refused: configured.conf: line 2 is not \"key = value\""))
        << server.log();
    EXPECT_EQ(body(), first);
    write("configured.json", "{}");
    EXPECT_TRUE(server.wait_for_log("both configured.conf and configured.json are there: keep one"));
    std::filesystem::remove(server.handlers() / "configured.json");
    write("configured.conf", "greeting = first\nfail = yes\n");  // init refuses this one
    EXPECT_TRUE(server.wait_for_log("init returned 1")) << server.log();
    EXPECT_EQ(body(), first);
    write("configured.conf", "greeting = fixed\n");
    EXPECT_TRUE(eventually([&] { return body() == "name=configured worker=0/1 greeting=fixed keys=greeting,"; }, 5s));
}

class HandlerConfigurationTwoWorkers : public HandlerConfiguration {
protected:
    HandlerConfigurationTwoWorkers() : HandlerConfiguration({"--workers", "2"}) {}
};

TEST_F(HandlerConfigurationTwoWorkers, EachWorkerIsToldItsIndexAndTheCount) {
    start();
    std::set<std::string> seen;
    for (int i = 0; i < 200 && seen.size() < 2; ++i) seen.insert(body());
    EXPECT_EQ(seen, (std::set<std::string>{"name=configured worker=0/2 greeting=(none) keys=",
                                           "name=configured worker=1/2 greeting=(none) keys="}));
}

}  // namespace
}  // namespace cspd::test
