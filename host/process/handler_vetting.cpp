#include "process/handler_vetting.hpp"

#include "common/unique_fd.hpp"
#include "handler/loader.hpp"
#include "handler/private_folders.hpp"
#include "process/crash_reporter.hpp"
#include "stats/quarantine_list.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace cspd {
namespace {
using Clock = std::chrono::steady_clock;

constexpr int kReportFd = 3;

/// What the child said, a line each: "load", "init", "cleanup", then "ok" or "refused REASON".
struct ChildReport {
    HandlerPhase phase = HandlerPhase::none;  // the last phase it entered
    bool ok = false;
    bool refused = false;
    std::string refusal;
    bool timed_out = false;
    int status = 0;  // waitpid's
};

void parse_lines(std::string& pending, ChildReport& report) {
    std::size_t end;
    while ((end = pending.find('\n')) != std::string::npos) {
        const std::string line = pending.substr(0, end);
        pending.erase(0, end + 1);
        if (line == "load") report.phase = HandlerPhase::load;
        else if (line == "init") report.phase = HandlerPhase::init;
        else if (line == "cleanup") report.phase = HandlerPhase::cleanup;
        else if (line == "ok") report.ok = true;
        else if (line.rfind("refused ", 0) == 0) report.refused = true, report.refusal = line.substr(8);
    }
}

/// Runs the child and reads its report until it closes the pipe, or the deadline of the phase
/// it is in passes (then it is killed).
ChildReport run_child(const std::string& name, const std::filesystem::path& image,
                      const std::filesystem::path& config_folder, unsigned workers, std::chrono::seconds limit,
                      std::string& error) {
    ChildReport report;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        error = std::string("pipe: ") + std::strerror(errno);
        return report;
    }
    UniqueFd read_end(fds[0]), write_end(fds[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, write_end.get(), kReportFd);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::string program = "cspd", verb = "__vet", name_text = name, image_text = image.string(),
                config_text = config_folder.string(), workers_text = std::to_string(workers);
    char* argv[] = {program.data(),     verb.data(),        name_text.data(), image_text.data(),
                    config_text.data(), workers_text.data(), nullptr};
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    write_end.reset();
    if (spawned != 0) {
        error = std::string("cannot start the vetting process: ") + std::strerror(spawned);
        return report;
    }
    std::string pending;
    HandlerPhase timed_phase = HandlerPhase::none;
    Clock::time_point deadline = Clock::now() + limit;
    for (;;) {
        if (report.phase != timed_phase) {  // each phase gets the whole limit
            timed_phase = report.phase;
            deadline = Clock::now() + limit;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            report.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd wait{read_end.get(), POLLIN, 0};
        const int ready = ::poll(&wait, 1, static_cast<int>(std::min<long long>(left, 1000)));
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        char chunk[512];
        const ssize_t n = ::read(read_end.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the child is done, one way or another
        pending.append(chunk, static_cast<std::size_t>(n));
        parse_lines(pending, report);
    }
    while (::waitpid(pid, &report.status, 0) < 0 && errno == EINTR) {
    }
    remove_private_folders_of(pid);  // one killed for its deadline could not remove its own
    return report;
}

std::string describe_death(int status) {
    if (WIFSIGNALED(status))
        return std::string("signal ") + std::to_string(WTERMSIG(status)) + " (" + sigdescr_np(WTERMSIG(status)) + ")";
    return "exit code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

HandlerVetting::HandlerVetting(std::chrono::seconds init_timeout, const SharedStats* stats, bool try_versions,
                               unsigned workers)
    : init_timeout_(init_timeout), workers_(workers), stats_(stats), try_versions_(try_versions) {}

GateVerdict HandlerVetting::check(const std::string& name, const std::filesystem::path& image,
                                  const HandlerFileIdentity& file, const std::filesystem::path& config_folder) {
    const Key key{name, file.size, file.content_hash};
    if (auto it = fenced_.find(key); it != fenced_.end()) return it->second;
    if (stats_) {
        const auto phase = static_cast<HandlerPhase>(quarantine_phase(*stats_, name, file.size, file.content_hash));
        if (phase == HandlerPhase::load || phase == HandlerPhase::init)
            return {false, true, std::string("fenced: this version brought a worker down ") + phase_text(phase)};
    }
    if (!try_versions_) return {};
    GateVerdict verdict = vet(name, image, config_folder);
    if (verdict.fenced) fenced_[key] = verdict;
    return verdict;
}

GateVerdict HandlerVetting::vet(const std::string& name, const std::filesystem::path& image,
                                const std::filesystem::path& config_folder) {
    const auto started = Clock::now();
    std::string error;
    const ChildReport report = run_child(name, image, config_folder, workers_, init_timeout_, error);
    if (!error.empty()) {
        // Vetting could not run (no processes left, say): let the load go on unvetted rather than
        // refuse every handler.
        spdlog::error("handler {}: {}; loading it untried", name, error);
        return {};
    }
    spdlog::debug("handler {}: vetted in {:.1f} ms", name,
                  std::chrono::duration<double, std::milli>(Clock::now() - started).count());
    if (report.ok && WIFEXITED(report.status) && WEXITSTATUS(report.status) == 0) return {};
    if (report.refused) return {false, false, report.refusal};  // an ordinary refusal: it may be fixed in place
    const char* where = report.phase == HandlerPhase::none ? "while loading" : phase_text(report.phase);
    if (report.timed_out)
        return {false, true,
                std::string("fenced: did not return ") + where + " within " + std::to_string(init_timeout_.count()) +
                    " s (--init-timeout) when tried in a vetting process"};
    const bool exited = WIFEXITED(report.status);
    return {false, true,
            std::string("fenced: ") + (exited ? "exited" : "crashed") + " " + where + " when tried in a vetting process (" +
                describe_death(report.status) + ")"};
}

int run_vetting_child(int argc, char** argv) {
    if (argc < 5) return 2;
    // The vetting process dies with the one that asked.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    spdlog::set_default_logger(spdlog::stderr_color_mt("cspd-vet"));
    spdlog::set_level(spdlog::level::warn);  // its loads and unloads are not news
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%P vetting] %v");
    install_crash_reporter();  // a crash report names the handler and the phase
    const auto say = [](std::string_view line) {
        std::string text(line);
        text.push_back('\n');
        [[maybe_unused]] const ssize_t n = ::write(kReportFd, text.data(), text.size());
    };
    try {
        HandlerLoader loader(private_folder_parent(), false);  // the file is the caller's private copy
        loader.on_phase([&](HandlerPhase phase, const HandlerLabel&) {
            if (phase != HandlerPhase::none) say(phase == HandlerPhase::init ? "init" : "load");
        });
        loader.set_worker(CSP_VETTING, static_cast<unsigned>(std::strtoul(argv[4], nullptr, 10)));
        LoadResult result = loader.load(argv[1], argv[2], argv[3]);
        if (!result.version) {
            std::string reason = result.reason;
            for (char& c : reason)
                if (c == '\n') c = ' ';
            say("refused " + reason);
            return 0;
        }
        say("cleanup");
        result.version.reset();  // cleanup, then dlclose: static destructors
        say("ok");
    } catch (const std::exception& e) {
        say(std::string("refused cannot vet: ") + e.what());
    }
    return 0;
}

}  // namespace cspd
