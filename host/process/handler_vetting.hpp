// Vetting: before this process lets a new handler version in, the version is tried in a
// short-lived child process (`cspd __vet NAME FILE`) that loads it, runs its init under
// --init-timeout, runs its cleanup and unloads it, reporting each phase on a pipe. A version
// whose child faults, hangs or exits on the way is fenced: refused in this process for good
// (the child's crash report, in the log, names the handler and the phase). So a handler whose
// static constructor dereferences null, or whose init never returns, costs one child process,
// not a worker. Versions fenced by the master (one crashed a worker while loading) are refused
// without a try.
//
// The child is watched from the control io_context (its pipe and a deadline timer), never
// waited for: other names are vetted, loaded and removed meanwhile, and signals are handled.
#pragma once

#include "handler/load_gate.hpp"
#include "process/vetting_verdicts.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace boost::asio {
class io_context;
}

namespace cspd {

struct SharedStats;
class VettingForkServer;

/// The environment variable through which a worker tells its vetting processes --data-dir.
inline constexpr const char* kDataDirVariable = "CSPD_DATA_DIR";
class VettingProcess;

class HandlerVetting final : public LoadGate {
public:
    /// `stats`: the shared segment, for the master's fences (may be null). Without `try_versions`
    /// (--no-vetting) only those fences are checked.
    /// `workers` is what init is told as the worker count (its index there is CSP_VETTING).
    /// With a `server_folder` (a master's), verdicts are shared: each version is vetted once per server.
    HandlerVetting(boost::asio::io_context& io, std::chrono::seconds init_timeout, const SharedStats* stats,
                   bool try_versions = true, unsigned workers = 1, const std::filesystem::path& server_folder = {});
    ~HandlerVetting();
    HandlerVetting(const HandlerVetting&) = delete;
    HandlerVetting& operator=(const HandlerVetting&) = delete;

    void check(const std::string& name, const std::filesystem::path& image, const HandlerFileIdentity& file,
               const std::filesystem::path& config_folder, Done done) override;
    void cancel(const std::string& name) override;
    void cancel_all() override;

    /// Vetting processes running now.
    std::size_t running() const { return runs_.size(); }
    /// Starts the fork server now, with `call_filter` (process/sandbox); nothing without vetting.
    bool start_fork_server(const std::string& call_filter, std::string& error);
    /// When a vetting process cannot be started: `lost` gives the reason the version is refused
    /// (and may ask for a successor). Without it, or if it says nothing, the version loads untried.
    void when_lost(std::function<std::string()> lost) { lost_ = std::move(lost); }

private:
    using Key = std::tuple<std::string, std::uint64_t, std::uint64_t>;  // name, size, hash
    /// A version waiting for its verdict.
    struct Pending {
        std::string name, id;
        Key key;
        std::filesystem::path image, config_folder;
        Done done;
    };
    /// Gives `pending` its verdict: one another worker wrote, else after vetting it here (or
    /// waiting for the worker that vets it now).
    void settle(Pending pending);
    void vet(Pending pending, std::shared_ptr<UniqueFd> claim);

    boost::asio::io_context& io_;
    std::chrono::seconds init_timeout_;
    unsigned workers_;
    const SharedStats* stats_;
    bool try_versions_;
    std::map<Key, GateVerdict> fenced_;  // what failed here stays refused
    VettingVerdicts verdicts_;
    std::unique_ptr<VettingForkServer> forks_;  // where vetting processes come from
    std::function<std::string()> lost_;
    std::map<std::string, std::shared_ptr<VettingProcess>> runs_;
    struct Wait;  // for another worker's verdict
    std::map<std::string, std::shared_ptr<Wait>> waits_;
};

/// The child's side: `argv` is {"__vet", NAME, FILE, CONFIG_FOLDER, WORKERS}. Reports on descriptor 3; the exit code
/// says nothing the report does not. `prepared`: prepare_vetting_process() ran already (in the fork
/// server this process was forked from).
int run_vetting_child(int argc, char** argv, bool prepared = false);
/// What every vetting process sets up before it tries a version: its priority, log, crash reporter.
void prepare_vetting_process();

}  // namespace cspd
