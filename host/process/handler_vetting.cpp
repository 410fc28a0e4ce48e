#include "process/handler_vetting.hpp"

#include "handler/host_services.hpp"

#include "handler/loader.hpp"
#include "process/crash_reporter.hpp"
#include "process/vetting_fork_server.hpp"
#include "process/vetting_process.hpp"
#include "stats/quarantine_list.hpp"

#include <boost/asio/steady_timer.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace cspd {
namespace {

// Vetting runs below serving: a swap under load takes cores from requests as little as it can.
constexpr int kVettingNice = 10;
// How often a worker waiting for another's verdict looks for it.
constexpr auto kVerdictPoll = std::chrono::milliseconds(5);

std::string describe_death(int status) {
    if (WIFSIGNALED(status))
        return std::string("signal ") + std::to_string(WTERMSIG(status)) + " (" + sigdescr_np(WTERMSIG(status)) + ")";
    return "exit code " + std::to_string(WEXITSTATUS(status));
}

GateVerdict verdict_of(const VettingReport& report, std::chrono::seconds limit) {
    if (report.ok && WIFEXITED(report.status) && WEXITSTATUS(report.status) == 0) return {};
    if (report.refused) return {false, false, report.refusal};  // an ordinary refusal: it may be fixed in place
    const char* where = report.phase == HandlerPhase::none ? "while loading" : phase_text(report.phase);
    if (report.timed_out)
        return {false, true,
                std::string("fenced: did not return ") + where + " within " + std::to_string(limit.count()) +
                    " s (--init-timeout) when tried in a vetting process"};
    const bool exited = WIFEXITED(report.status);
    return {false, true,
            std::string("fenced: ") + (exited ? "exited" : "crashed") + " " + where +
                " when tried in a vetting process (" + describe_death(report.status) + ")"};
}

}  // namespace

struct HandlerVetting::Wait {
    explicit Wait(boost::asio::io_context& io) : timer(io, kVerdictPoll) {}
    boost::asio::steady_timer timer;
};

HandlerVetting::HandlerVetting(boost::asio::io_context& io, std::chrono::seconds init_timeout,
                               const SharedStats* stats, bool try_versions, unsigned workers,
                               const std::filesystem::path& server_folder)
    : io_(io), init_timeout_(init_timeout), workers_(workers), stats_(stats), try_versions_(try_versions),
      verdicts_(server_folder), forks_(std::make_unique<VettingForkServer>(io)) {}

HandlerVetting::~HandlerVetting() { cancel_all(); }

void HandlerVetting::check(const std::string& name, const std::filesystem::path& image,
                           const HandlerFileIdentity& file, const std::filesystem::path& config_folder, Done done) {
    cancel(name);
    const Key key{name, file.size, file.content_hash};
    if (auto it = fenced_.find(key); it != fenced_.end()) return done(it->second);
    if (stats_) {
        const auto phase = static_cast<HandlerPhase>(quarantine_phase(*stats_, name, file.size, file.content_hash));
        if (phase == HandlerPhase::load || phase == HandlerPhase::init)
            return done({false, true, std::string("fenced: this version brought a worker down ") + phase_text(phase)});
    }
    if (!try_versions_) return done({});
    // The same name, hash and size as a kept version's: one verdict per version per server.
    char version[48];
    std::snprintf(version, sizeof version, ".%016" PRIx64 ".%" PRIu64, file.content_hash, file.size);
    settle(Pending{name, name + version, key, image, config_folder, std::move(done)});
}

void HandlerVetting::settle(Pending pending) {
    if (std::optional<GateVerdict> verdict = verdicts_.find(pending.id)) {
        spdlog::debug("handler {}: {} by another worker's vetting", pending.name, verdict->pass ? "passed" : "refused");
        if (verdict->fenced) fenced_[pending.key] = *verdict;
        return pending.done(std::move(*verdict));
    }
    std::optional<UniqueFd> claim = verdicts_.enabled() ? verdicts_.claim(pending.id) : std::optional(UniqueFd());
    if (claim && *claim)
        if (std::optional<GateVerdict> verdict = verdicts_.find(pending.id)) {
            // Written between the look above and the claim: taken, not vetted again.
            if (verdict->fenced) fenced_[pending.key] = *verdict;
            return pending.done(std::move(*verdict));
        }
    if (!claim) {
        // Another worker vets it now: look for its verdict shortly (or vet it, should that worker die).
        auto wait = std::make_shared<Wait>(io_);
        waits_[pending.name] = wait;
        wait->timer.async_wait([this, wait, pending = std::move(pending)](boost::system::error_code ec) mutable {
            if (ec) return;
            if (const auto it = waits_.find(pending.name); it == waits_.end() || it->second != wait) return;
            waits_.erase(pending.name);
            settle(std::move(pending));
        });
        return;
    }
    vet(std::move(pending), std::make_shared<UniqueFd>(std::move(*claim)));
}

void HandlerVetting::vet(Pending pending, std::shared_ptr<UniqueFd> claim) {
    // Read before `pending` moves into the callback.
    const std::string name = pending.name;
    const std::filesystem::path image = pending.image, config_folder = pending.config_folder;
    runs_[name] = VettingProcess::start(
        io_, forks_.get(), name, image, config_folder, workers_, init_timeout_,
        [this, pending = std::move(pending), claim](const VettingReport& report) {
            const auto run = std::move(runs_[pending.name]);  // lives until this returns
            runs_.erase(pending.name);
            if (!report.error.empty()) {
                // Vetting could not run (no processes left, say): let the load go on unvetted
                // rather than refuse every handler -- unless a successor can vet it (sandboxed).
                if (std::string refusal = lost_ ? lost_() : std::string(); !refusal.empty()) {
                    spdlog::error("handler {}: {}", pending.name, report.error);
                    return pending.done(GateVerdict{false, false, std::move(refusal)});
                }
                spdlog::error("handler {}: {}; loading it untried", pending.name, report.error);
                return pending.done({});
            }
            spdlog::debug("handler {}: vetted in {:.1f} ms", pending.name, report.elapsed_ms);
            GateVerdict verdict = verdict_of(report, init_timeout_);
            // Shared before the claim goes, so waiters find it. An ordinary refusal (init returned
            // nonzero: its database was down, say) is not: each worker tries for itself.
            if (verdict.pass || verdict.fenced) verdicts_.record(pending.id, verdict);
            if (verdict.fenced) fenced_[pending.key] = verdict;
            pending.done(std::move(verdict));
        });
}

bool HandlerVetting::start_fork_server(const std::string& call_filter, std::string& error) {
    return !try_versions_ || forks_->start_now(call_filter, error);
}

void HandlerVetting::cancel(const std::string& name) {
    if (const auto wait = waits_.find(name); wait != waits_.end()) {
        wait->second->timer.cancel();
        waits_.erase(wait);
    }
    const auto it = runs_.find(name);
    if (it == runs_.end()) return;
    const auto run = std::move(it->second);
    runs_.erase(it);
    run->cancel();
}

void HandlerVetting::cancel_all() {
    for (auto& [name, wait] : waits_) wait->timer.cancel();
    waits_.clear();
    auto runs = std::move(runs_);
    runs_.clear();
    for (auto& [name, run] : runs) run->cancel();
}

void prepare_vetting_process() {
    ::setpriority(PRIO_PROCESS, 0, kVettingNice);  // below serving (inherited by a fork server's children)
    spdlog::set_default_logger(spdlog::stderr_color_mt("cspd-vet"));
    spdlog::set_level(spdlog::level::warn);  // its loads and unloads are not news
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%P vetting] %v");
    install_crash_reporter();  // a crash report names the handler and the phase
    // csp_data_dir: the worker that started this process said where (its environment, inherited).
    if (const char* data_dir = std::getenv(kDataDirVariable)) host_services().data_dir = data_dir;
}

int run_vetting_child(int argc, char** argv, bool prepared) {
    if (argc < 5) return 2;
    // The vetting process dies with the one that asked (a fork does not inherit this).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!prepared) prepare_vetting_process();
    const auto say = [](std::string_view line) {
        std::string text(line);
        text.push_back('\n');
        [[maybe_unused]] const ssize_t n = ::write(kVettingReportFd, text.data(), text.size());
    };
    try {
        HandlerLoader loader{LoadInPlace{}};  // the file is the caller's private copy
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
