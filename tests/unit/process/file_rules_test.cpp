// The sandbox's file rules (Landlock), in a child process each (rules cannot be taken back): what
// they list is reachable as listed, the rest is refused with EACCES whatever the file modes say,
// /etc's secrets stay out, and signals reach only the process's own domain.
#include "process/file_rules.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>

namespace cspd {
namespace {

namespace fs = std::filesystem;

class FileRulesTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (landlock_abi() == 0) GTEST_SKIP() << "no Landlock in this kernel";
        root_ = fs::temp_directory_path() / ("cspd-file-rules-" + std::to_string(::getpid()));
        for (const char* folder : {"readable", "writable", "elsewhere"}) fs::create_directories(root_ / folder);
        for (const char* file : {"readable/a", "writable/b", "elsewhere/c"}) std::ofstream(root_ / file) << "x";
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }

    /// `body`'s exit code in a child that applied `rules` first (99: they could not be applied).
    static int in_child(const FileRules& rules, const std::function<int()>& body) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            std::string why;
            ::_exit(apply_file_rules(rules, why) ? body() : 99);
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    static int refused(const fs::path& path, int flags) {
        const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
        if (fd >= 0) ::close(fd);
        return fd < 0 && errno == EACCES ? 0 : 1;
    }
    static int allowed(const fs::path& path, int flags) {
        const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
        if (fd >= 0) ::close(fd);
        return fd >= 0 ? 0 : 1;
    }

    fs::path root_;
};

TEST_F(FileRulesTest, ListedFoldersAreReachableAsListedAndNothingElse) {
    FileRules rules;
    rules.read.push_back(root_ / "readable");
    rules.write.push_back(root_ / "writable");
    const fs::path root = root_;
    EXPECT_EQ(in_child(rules, [root] {
                  int failures = 0;
                  failures += allowed(root / "readable/a", O_RDONLY);
                  failures += refused(root / "readable/a", O_WRONLY);
                  failures += refused(root / "readable/new", O_WRONLY | O_CREAT);
                  failures += allowed(root / "writable/b", O_RDWR);
                  failures += allowed(root / "writable/new", O_WRONLY | O_CREAT);
                  failures += refused(root / "elsewhere/c", O_RDONLY);
                  failures += refused(root / "elsewhere/c", O_WRONLY);
                  failures += refused("/etc/hostname", O_RDONLY);
                  return failures;
              }),
              0);
}

TEST_F(FileRulesTest, AppendOnlyFoldersTakeNewFilesButGiveNothingBack) {
    FileRules rules;
    rules.append.push_back(root_ / "writable");
    const fs::path root = root_;
    EXPECT_EQ(in_child(rules, [root] {
                  int failures = 0;
                  failures += allowed(root / "writable/b", O_WRONLY | O_APPEND);
                  failures += allowed(root / "writable/rotated.log", O_WRONLY | O_APPEND | O_CREAT);
                  failures += refused(root / "writable/b", O_RDONLY);
                  return failures;
              }),
              0);
}

TEST_F(FileRulesTest, OnlyTheWorldReadablePartsOfAFolderAreListed) {
    const fs::path etc = root_ / "etc";
    fs::create_directories(etc / "ssl" / "private");
    fs::create_directories(etc / "open");
    fs::create_directories(etc / "certs");
    std::ofstream(etc / "hostname") << "h";
    std::ofstream(etc / "shadow") << "root:secret";
    std::ofstream(etc / "ssl" / "openssl.cnf") << "c";
    std::ofstream(etc / "ssl" / "private" / "key.pem") << "k";
    std::ofstream(etc / "open" / "file") << "f";
    std::ofstream(etc / "certs" / "site.key") << "k";
    for (const fs::path& p : {etc, etc / "ssl", etc / "open", etc / "certs"}) ::chmod(p.c_str(), 0755);
    for (const fs::path& p : {etc / "hostname", etc / "ssl" / "openssl.cnf", etc / "open" / "file", etc / "certs" / "site.key"})
        ::chmod(p.c_str(), 0644);
    ::chmod((etc / "shadow").c_str(), 0640);
    ::chmod((etc / "ssl" / "private").c_str(), 0700);

    FileRules rules;
    add_world_readable(rules, etc, {etc / "certs"});
    const auto listed = [&](const fs::path& p) { return std::find(rules.read.begin(), rules.read.end(), p) != rules.read.end(); };
    EXPECT_TRUE(listed(etc / "hostname"));
    EXPECT_TRUE(listed(etc / "open"));  // wholly readable: one rule
    EXPECT_TRUE(listed(etc / "ssl" / "openssl.cnf"));
    EXPECT_FALSE(listed(etc));
    EXPECT_FALSE(listed(etc / "ssl"));
    EXPECT_FALSE(listed(etc / "shadow"));
    EXPECT_FALSE(listed(etc / "certs" / "site.key"));

    EXPECT_EQ(in_child(rules, [etc] {
                  int failures = 0;
                  failures += allowed(etc / "hostname", O_RDONLY);
                  failures += allowed(etc / "open" / "file", O_RDONLY);
                  failures += refused(etc / "shadow", O_RDONLY);  // root could: the rules say no
                  failures += refused(etc / "ssl" / "private" / "key.pem", O_RDONLY);
                  failures += refused(etc / "certs" / "site.key", O_RDONLY);
                  return failures;
              }),
              0);
}

TEST_F(FileRulesTest, SignalsReachOnlyTheProcessesStartedInside) {
    if (landlock_abi() < 6) GTEST_SKIP() << "scoped signals need Landlock 6";
    FileRules rules;
    EXPECT_EQ(in_child(rules, [] {
                  int failures = 0;
                  failures += ::kill(::getppid(), 0) == -1 && errno == EPERM ? 0 : 1;  // outside
                  const pid_t inner = ::fork();
                  if (inner == 0) {
                      ::pause();
                      ::_exit(0);
                  }
                  failures += ::kill(inner, SIGKILL) == 0 ? 0 : 1;  // started inside
                  ::waitpid(inner, nullptr, 0);
                  return failures;
              }),
              0);
}

}  // namespace
}  // namespace cspd
