#include "test_server.hpp"

#include <iostream>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace cspd::test {

TestServer::TestServer(std::vector<std::string> extra_args, bool start_now)
    : handlers_(dir_ / "handlers"), www_(dir_ / "www"), log_file_(dir_ / "cspd.log"),
      extra_args_(std::move(extra_args)) {
    std::filesystem::create_directories(handlers_);
    std::filesystem::create_directories(www_);
    if (start_now) start();
}

TestServer::~TestServer() {
    if (pid_ > 0) {
        ::kill(-pid_, SIGKILL);  // the master and its workers: they share the group it leads
        ::waitpid(pid_, nullptr, 0);
    }
}

void TestServer::start() {
    std::vector<std::string> args{CSPD_BINARY, "--bind", "127.0.0.1", "--handlers", handlers_.string(),
                                  "--www",     www_.string()};
    const auto given = [&](const char* flag) {
        return std::find(extra_args_.begin(), extra_args_.end(), flag) != extra_args_.end();
    };
    if (!given("--port")) args.insert(args.end(), {"--port", "0"});
    if (!given("--log-level")) args.insert(args.end(), {"--log-level", "debug"});
    // Tests keep handlers in private (0700) temporary folders that nobody else may read: as root
    // they say so (workers would otherwise run as nobody). The privilege tests name --user.
    if (!given("--user") && ::geteuid() == 0) args.insert(args.end(), {"--user", "root"});
    if (!given("--workers") && !given("--single-process")) {
        args.insert(args.end(), {"--workers", "1"});  // master + one worker: log lines appear once
        if (!given("--threads")) args.insert(args.end(), {"--threads", "2"});  // cross-loop effects show
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    // With --log-file the server's own file is where its log (and port) is.
    if (auto it = std::find(extra_args_.begin(), extra_args_.end(), "--log-file");
        it != extra_args_.end() && std::next(it) != extra_args_.end())
        log_file_ = *std::next(it);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const auto stderr_file = dir_.path() / "cspd.log";
    posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setpgroup(&attributes, 0);  // its own group, so that teardown reaches every worker
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    const std::size_t earlier_log = log().size();  // a restart: the port is in what this start writes
    int rc = posix_spawn(&pid_, args[0].c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0]);

    const std::regex listening(R"(listening on [^ ]*:(\d+) )");
    bool up = eventually(
        [&] {
            std::smatch m;
            std::string text = log();
            text.erase(0, std::min(earlier_log, text.size()));
            if (!std::regex_search(text, m, listening)) return false;
            port_ = static_cast<unsigned short>(std::stoi(m[1]));
            return true;
        },
        std::chrono::seconds(10));
    if (!up) throw std::runtime_error("cspd did not start; its log:\n" + log());
}

int TestServer::stop(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    pid_t done = 0;
    eventually([&] { return (done = ::waitpid(pid_, &status, WNOHANG)) != 0; }, timeout);
    if (done != pid_) {
        std::cerr << "note: the server did not stop within " << timeout.count() << " ms (waitpid gave " << done
                  << "); its log ends:\n" << log().substr(log().size() > 4000 ? log().size() - 4000 : 0) << "\n";
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
    }
    ::kill(-pid_, SIGKILL);  // nothing should be left; if a worker is, it must not outlive the test
    pid_ = -1;
    // Under the sanitizers a worker's leak or undefined behaviour must fail the test, even
    // though the master carried on (crashes that tests cause on purpose are not these).
    const std::string text = log();
    if (::testing::Test::HasFailure())  // a failure that came before is read with what the server said
        std::cerr << "note: the test failed; the server's log ends:\n"
                  << text.substr(text.size() > 12000 ? text.size() - 12000 : 0) << "\n";
    for (const char* report : {"ERROR: LeakSanitizer", ": runtime error: "})
        if (auto at = text.find(report); at != std::string::npos)
            ADD_FAILURE() << "sanitizer report in the server's log:\n" << text.substr(at > 2000 ? at - 2000 : 0, 6000);
    if (!WIFEXITED(status)) {
        // Say how it ended, with the end of its log (some tests expect a death; the caller judges).
        std::cerr << "note: the server was killed by signal " << WTERMSIG(status) << "; its log ends:\n"
                  << text.substr(text.size() > 4000 ? text.size() - 4000 : 0) << "\n";
        return -1;
    }
    return WEXITSTATUS(status);
}

std::string TestServer::log() const {
    std::ifstream in(log_file_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

unsigned short TestServer::status_port() const {
    std::smatch m;
    const std::string text = log();
    if (!std::regex_search(text, m, std::regex(R"(/-/status and /metrics on 127\.0\.0\.1:(\d+) only)"))) return 0;
    return static_cast<unsigned short>(std::stoi(m[1]));
}

unsigned short TestServer::tls_port() const {
    std::smatch m;
    const std::string text = log();
    if (!std::regex_search(text, m, std::regex(R"(\(HTTPS on (\d+)\))"))) return 0;
    return static_cast<unsigned short>(std::stoi(m[1]));
}

bool TestServer::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) const {
    return eventually([&] { return log().find(text) != std::string::npos; }, timeout);
}

std::vector<pid_t> TestServer::worker_pids() const {
    std::vector<pid_t> pids;
    std::ifstream children("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
    pid_t child;
    while (children >> child) {
        // The master's other children (the key process: "cspd __keys") serve nothing.
        std::ifstream cmdline("/proc/" + std::to_string(child) + "/cmdline");
        std::string program, role;
        std::getline(cmdline, program, '\0');
        std::getline(cmdline, role, '\0');
        if (!role.starts_with("__")) pids.push_back(child);
    }
    if (pids.empty() && std::find(extra_args_.begin(), extra_args_.end(), "--single-process") != extra_args_.end())
        pids.push_back(pid_);
    return pids;
}

pid_t TestServer::worker_pid() const {
    pid_t pid = -1;
    eventually([&] {
        auto pids = worker_pids();
        if (!pids.empty()) pid = pids.front();
        return !pids.empty();
    });
    return pid;
}

std::size_t TestServer::handler_mappings() const {
    std::size_t count = 0;
    for (pid_t pid : worker_pids()) {
        std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
        std::string line;
        while (std::getline(maps, line))
            if (line.find("/cspd-" + std::to_string(pid) + "-") != std::string::npos) ++count;
    }
    return count;
}

}  // namespace cspd::test
