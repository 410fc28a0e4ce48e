#include "handler/compiler.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

#ifndef CSPD_SOURCE_SDK_INCLUDE
#define CSPD_SOURCE_SDK_INCLUDE "sdk/include"
#endif

namespace cspd {
namespace {

std::string compiler_for(const std::filesystem::path& source) {
    const bool cpp = source.extension() == ".cpp";
    const char* env = std::getenv(cpp ? "CXX" : "CC");
    return env && *env ? env : (cpp ? "c++" : "cc");
}

bool is_gcc(const std::string& compiler) { return compiler.find("clang") == std::string::npos; }

}  // namespace

HandlerCompiler::HandlerCompiler(std::filesystem::path sdk_include, std::filesystem::path scratch_dir,
                                 std::chrono::seconds time_limit)
    : sdk_include_(std::move(sdk_include)), scratch_dir_(std::move(scratch_dir)), time_limit_(time_limit) {}

std::filesystem::path HandlerCompiler::default_sdk_include() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto installed = exe.parent_path().parent_path() / "include";
        if (std::filesystem::exists(installed / "csp" / "csp.h")) return installed;
    }
    return CSPD_SOURCE_SDK_INCLUDE;
}

CompileResult HandlerCompiler::compile(const std::string& name, const std::filesystem::path& source,
                                       std::atomic<pid_t>& running, const std::atomic<bool>& cancel) const {
    static std::atomic<unsigned> counter{0};
    CompileResult result;
    const std::string stem = "compiled-" + name + "-" + std::to_string(++counter);
    const auto output = scratch_dir_ / (stem + ".so");
    const auto log = scratch_dir_ / (stem + ".log");
    const std::string compiler = compiler_for(source);

    // The same flags csp_add_handler and the pkg-config file give.
    std::vector<std::string> args{compiler,
                                  "-O2",
                                  "-g",
                                  "-shared",
                                  "-fPIC",
                                  "-fvisibility=hidden",
                                  "-fdiagnostics-color=never",
                                  "-Wall",
                                  "-I" + sdk_include_.string()};
    if (source.extension() == ".cpp") {
        args.push_back("-std=c++20");
        if (is_gcc(compiler)) args.push_back("-fno-gnu-unique");
    }
    args.insert(args.end(), {"-o", output.string(), source.string()});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    // Its own process group: a time-out or a shutdown kills cc1plus, as and ld too, not just the driver.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, compiler.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        result.diagnostics = "cannot run " + compiler + ": " + std::system_category().message(rc);
        return result;
    }
    running = pid;
    if (cancel) ::kill(-pid, SIGKILL);  // a stop that came while spawning

    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + time_limit_;
    bool timed_out = false;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    running = -1;
    ::kill(-pid, SIGKILL);  // anything the driver left behind in its group

    std::ifstream in(log);
    std::ostringstream text;
    text << in.rdbuf();
    result.diagnostics = text.str();
    std::error_code ec;
    std::filesystem::remove(log, ec);
    if (timed_out) {
        result.diagnostics += "compilation stopped after " + std::to_string(time_limit_.count()) + " s\n";
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        result.ok = true;
        result.output = output;
        return result;
    } else if (result.diagnostics.empty()) {
        result.diagnostics = compiler + " failed\n";
    }
    std::filesystem::remove(output, ec);
    return result;
}

}  // namespace cspd
