// Each serving process keeps its handler copies in a private folder (cspd-PID-XXXXXX under TMPDIR).
// A worker that dies cannot remove its own: the master does after the reap, and a server starting
// removes those that processes of an earlier run left.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <set>
#include <fstream>
#include <string>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// Sets TMPDIR for the servers a test starts, and puts it back after.
class PrivateFolders : public ::testing::Test {
protected:
    PrivateFolders() {
        if (const char* old = std::getenv("TMPDIR")) saved_ = old;
        ::setenv("TMPDIR", tmp_.path().c_str(), 1);
    }
    ~PrivateFolders() override {
        if (saved_.empty())
            ::unsetenv("TMPDIR");
        else
            ::setenv("TMPDIR", saved_.c_str(), 1);
    }
    std::set<std::string> folders() const {
        std::set<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(tmp_.path()))
            if (std::regex_match(entry.path().filename().string(), std::regex("cspd-[0-9]+-.{6}")))
                names.insert(entry.path().filename().string());
        return names;
    }
    bool has_folder_of(pid_t pid) const {
        for (const std::string& name : folders())
            if (name.starts_with("cspd-" + std::to_string(pid) + "-")) return true;
        return false;
    }
    TempDir tmp_;
    std::string saved_;
};

TEST_F(PrivateFolders, AKilledWorkersFolderIsRemovedByTheMaster) {
    TestServer server({"--workers", "2"}, false);
    std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
    server.start();
    ASSERT_TRUE(eventually([&] { return server.worker_pids().size() == 2; }, 5s));
    const pid_t victim = server.worker_pids().front();
    ASSERT_TRUE(eventually([&] { return has_folder_of(victim); }, 5s));
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    EXPECT_TRUE(eventually([&] { return !has_folder_of(victim); }, 5s)) << ::testing::PrintToString(folders());
    // The replacement has a folder of its own, and only the live workers (and the master, whose
    // folder keeps handler versions for them) have one.
    ASSERT_TRUE(eventually([&] {
        const auto pids = server.worker_pids();
        return pids.size() == 2 && std::find(pids.begin(), pids.end(), victim) == pids.end();
    }, 10s));
    EXPECT_TRUE(eventually([&] {
        const auto pids = server.worker_pids();
        return folders().size() == 3 && has_folder_of(pids[0]) && has_folder_of(pids[1]) && has_folder_of(server.pid());
    }, 5s)) << ::testing::PrintToString(folders());
    EXPECT_EQ(fetch(server.port(), "/csp/hello").value_or(HttpResponse{}).status, 200);
    EXPECT_EQ(server.stop(), 0);
    EXPECT_TRUE(folders().empty()) << ::testing::PrintToString(folders());
}

TEST_F(PrivateFolders, AServerStartingRemovesThoseOfProcessesThatAreGone) {
    // A pid nobody runs (the kernel says so), and one that runs: this test's own.
    pid_t gone = 4000000;
    while (gone > 1000 && !(::kill(gone, 0) != 0 && errno == ESRCH)) --gone;
    const auto left_by_gone = tmp_ / ("cspd-" + std::to_string(gone) + "-a1b2c3");
    const auto of_a_live_process = tmp_ / ("cspd-" + std::to_string(::getpid()) + "-d4e5f6");
    const auto not_ours = tmp_ / "cspd-notes";
    // Its pid is gone here, but its owner lock is held: a live process in another pid namespace
    // sharing this TMPDIR (a container) looks like that.
    const auto held_elsewhere = tmp_ / ("cspd-" + std::to_string(gone) + "-e7f8a9");
    for (const auto& folder : {left_by_gone, of_a_live_process, not_ours, held_elsewhere}) {
        std::filesystem::create_directories(folder);
        std::ofstream(folder / "hello.1.so") << "copy";
    }
    const int lock = ::open((held_elsewhere / ".owner").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(lock, 0);
    ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);
    for (const char* mode : {"--workers", "--single-process"}) {
        std::filesystem::create_directories(left_by_gone);
        std::vector<std::string> args = {mode};
        if (std::string(mode) == "--workers") args.push_back("1");
        TestServer server(args);
        EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(left_by_gone); }, 5s)) << mode;
        EXPECT_TRUE(std::filesystem::exists(of_a_live_process)) << mode;
        EXPECT_TRUE(std::filesystem::exists(not_ours)) << mode;
        EXPECT_TRUE(std::filesystem::exists(held_elsewhere)) << mode;
        EXPECT_EQ(server.stop(), 0);
    }
    ::close(lock);
}

}  // namespace
}  // namespace cspd::test
