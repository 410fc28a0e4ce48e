// What handlers declare of the sandbox in NAME.conf / NAME.json (process/sandbox_needs): read,
// checked against what a worker has, and refused when nothing may grant it.
#include "process/sandbox_needs.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cspd {
namespace {

namespace fs = std::filesystem;

class SandboxNeedsTest : public ::testing::Test {
protected:
    void SetUp() override {
        folder_ = fs::temp_directory_path() / ("cspd-needs-" + std::to_string(::getpid()));
        fs::create_directories(folder_ / "handlers");
        fs::create_directories(folder_ / "built");
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(folder_, ec);
    }
    fs::path handlers() const { return folder_ / "handlers"; }
    fs::path folder_;
};

TEST_F(SandboxNeedsTest, AConfFileDeclaresPathsExecAndNoNetwork) {
    std::ofstream(handlers() / "maps.conf") << "zoom = 3\nsandbox.read = /srv/maps, /usr/local/share/geo/\n"
                                               "sandbox.write = /var/lib/maps\nsandbox.exec = true\nsandbox.network = false\n";
    const SandboxNeeds needs = needs_of(handlers(), "maps", handlers() / "maps.so", {});
    EXPECT_EQ(needs.error, "");
    EXPECT_EQ(needs.read, (std::vector<fs::path>{"/srv/maps", "/usr/local/share/geo/"}));
    EXPECT_EQ(needs.write, std::vector<fs::path>{"/var/lib/maps"});
    EXPECT_TRUE(needs.exec);
    EXPECT_FALSE(needs.network);
    EXPECT_EQ(needs.describe(), "read /srv/maps, read /usr/local/share/geo/, write /var/lib/maps, exec, no network");
}

TEST_F(SandboxNeedsTest, AJsonFileMayListPaths) {
    std::ofstream(handlers() / "maps.json") << R"({"sandbox": {"read": ["/srv/a", "/srv/b"], "exec": false}})";
    const SandboxNeeds needs = needs_of(handlers(), "maps", handlers() / "maps.so", {});
    EXPECT_EQ(needs.error, "");
    EXPECT_EQ(needs.read, (std::vector<fs::path>{"/srv/a", "/srv/b"}));
    EXPECT_FALSE(needs.exec);
    EXPECT_TRUE(needs.network);
}

TEST_F(SandboxNeedsTest, WhatCannotBeTakenIsAnError) {
    const auto error_of = [&](const std::string& conf) {
        std::ofstream(handlers() / "h.conf") << conf;
        return needs_of(handlers(), "h", handlers() / "h.so", {"/etc/cspd/certs"}).error;
    };
    EXPECT_EQ(error_of("sandbox.read = data\n"), "sandbox.read: data is not an absolute path");
    EXPECT_EQ(error_of("sandbox.exec = maybe\n"), "sandbox.exec is maybe, not true or false");
    EXPECT_EQ(error_of("sandbox.mount = /\n"),
              "sandbox.mount is not a sandbox declaration (sandbox.read, .write, .exec, .network)");
    EXPECT_EQ(error_of("sandbox.read = /etc/cspd/certs/site.key\n"),
              "it asks for /etc/cspd/certs/site.key, which holds or lies beneath --certs: no handler may read the keys");
    // A folder that holds the keys is refused as well as one beneath them, however spelt.
    EXPECT_EQ(error_of("sandbox.read = /etc\n"),
              "it asks for /etc, which holds or lies beneath --certs: no handler may read the keys");
    EXPECT_EQ(error_of("sandbox.write = /etc/cspd/certs/\n"),
              "it asks for /etc/cspd/certs/, which holds or lies beneath --certs: no handler may read the keys");
}

TEST_F(SandboxNeedsTest, ALinkOutOfTheFolderNeedsTheFolderItLeadsInto) {
    std::ofstream(folder_ / "built" / "hello.so") << "elf";
    fs::create_symlink(folder_ / "built" / "hello.so", handlers() / "hello.so");
    const SandboxNeeds needs = needs_of(handlers(), "hello", handlers() / "hello.so", {});
    EXPECT_EQ(needs.read, std::vector<fs::path>{fs::canonical(folder_ / "built")});
    // The folder's union counts it; a link within the folder needs nothing.
    fs::copy_file(folder_ / "built" / "hello.so", handlers() / "real.so");
    fs::create_symlink(handlers() / "real.so", handlers() / "alias.so");
    EXPECT_TRUE(needs_of(handlers(), "alias", handlers() / "alias.so", {}).read.empty());
    EXPECT_EQ(needs_of_folder(handlers(), false, {}).read, std::vector<fs::path>{fs::canonical(folder_ / "built")});
}

TEST(SandboxNeeds, BeyondSaysWhatAProcessLacks) {
    FileRules rules;
    rules.read = {"/srv/maps"};
    rules.run = {"/usr"};
    rules.write = {"/var/lib/cspd"};
    SandboxNeeds needs;
    needs.read = {"/srv/maps/tiles", "/usr/share/zoneinfo", "/var/lib/cspd/x", "/opt/data"};
    needs.write = {"/var/lib/cspd/reports", "/srv/maps"};
    needs.exec = true;
    EXPECT_EQ(beyond(needs, rules, false, true), "read /opt/data, write /srv/maps, exec");
    EXPECT_EQ(beyond(needs, rules, true, true), "read /opt/data, write /srv/maps");
    SandboxNeeds online;
    EXPECT_EQ(beyond(online, rules, false, false), "network");
    EXPECT_EQ(beyond(online, rules, false, true), "");
}

}  // namespace
}  // namespace cspd
