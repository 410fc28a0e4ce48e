// Which handler files cspd trusts enough to load (sshd's StrictModes): not writable by group or
// others, in a folder others cannot write in -- unless it is sticky, as a Kubernetes ConfigMap's
// root is -- and, for a file reached through a link, the folder it really lives in passes too.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <signal.h>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
namespace fs = std::filesystem;

bool serves_version_1(const TestServer& server) {
    return eventually([&] {
        auto r = fetch(server.port(), "/csp/versioned");
        return r && r->status == 200 && r->body == "version 1";
    }, 3s);
}

TEST(HandlerTrust, AFileOthersMayWriteIsRefused) {
    TestServer server;
    fs::copy_file(test_handler("v1/versioned.so"), server.handlers() / ".v.tmp");
    fs::permissions(server.handlers() / ".v.tmp", fs::perms::others_write, fs::perm_options::add);
    fs::rename(server.handlers() / ".v.tmp", server.handlers() / "versioned.so");
    EXPECT_TRUE(server.wait_for_log("writable by group or others"));
    EXPECT_EQ(fetch(server.port(), "/csp/versioned")->status, 404);
}

TEST(HandlerTrust, AFolderOthersMayWriteInIsRefusedUnlessItIsSticky) {
    TestServer server;
    fs::permissions(server.handlers(), fs::perms::all);  // 0777: anyone may replace versioned.so
    install_by_rename(test_handler("v1/versioned.so"), server.handlers() / "versioned.so");
    EXPECT_TRUE(server.wait_for_log("its folder is writable by others"));
    EXPECT_EQ(fetch(server.port(), "/csp/versioned")->status, 404);

    // 1777, as /tmp or a ConfigMap's root: others may add names, not replace root's.
    fs::permissions(server.handlers(), fs::perms::all | fs::perms::sticky_bit);
    install_by_rename(test_handler("v1/versioned.so"), server.handlers() / "versioned.so");
    EXPECT_TRUE(serves_version_1(server));
}

TEST(HandlerTrust, ALinkIntoAFolderOthersMayWriteInIsRefused) {
    TestServer server;
    TempDir elsewhere;
    fs::permissions(elsewhere.path(), fs::perms::all);  // 0777, not sticky
    fs::copy_file(test_handler("v1/versioned.so"), elsewhere / "versioned.so");
    fs::create_symlink(elsewhere / "versioned.so", server.handlers() / "versioned.so");
    EXPECT_TRUE(server.wait_for_log("its folder is writable by others (chmod o-w " + elsewhere.path().string()));
    EXPECT_EQ(fetch(server.port(), "/csp/versioned")->status, 404);

    fs::permissions(elsewhere.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                          fs::perms::others_read | fs::perms::others_exec);  // 0755
    // A new file behind the same link (a refused file is not looked at again until it changes),
    // and SIGHUP, since nothing in the handlers folder itself changed.
    install_by_rename(test_handler("v1/versioned.so"), elsewhere / "versioned.so");
    ::kill(server.pid(), SIGHUP);
    EXPECT_TRUE(serves_version_1(server)) << server.log();
}

}  // namespace
}  // namespace cspd::test
