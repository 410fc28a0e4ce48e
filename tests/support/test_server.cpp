#include "test_server.hpp"

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
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

void TestServer::start() {
    std::vector<std::string> args{CSPD_BINARY, "--port", "0", "--bind", "127.0.0.1", "--handlers", handlers_.string(),
                                  "--www", www_.string(), "--log-level", "debug"};
    if (std::find(extra_args_.begin(), extra_args_.end(), "--workers") == extra_args_.end()) {
        args.push_back("--workers");
        args.push_back("2");  // two loops on every machine: cross-loop effects show in tests
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid_, args[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0]);

    const std::regex listening(R"(listening on [^ ]*:(\d+) )");
    bool up = eventually(
        [&] {
            std::smatch m;
            std::string text = log();
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
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return -1;
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string TestServer::log() const {
    std::ifstream in(log_file_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool TestServer::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) const {
    return eventually([&] { return log().find(text) != std::string::npos; }, timeout);
}

std::size_t TestServer::handler_mappings() const {
    std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
    std::string line;
    std::size_t count = 0;
    while (std::getline(maps, line))
        if (line.find("/cspd-" + std::to_string(pid_) + "-") != std::string::npos) ++count;
    return count;
}

} // namespace cspd::test
