// Vetting: before this process lets a new handler version in, the version is tried in a
// short-lived child process (`cspd __vet NAME FILE`) that loads it, runs its init under
// --init-timeout, runs its cleanup and unloads it, reporting each phase on a pipe. A version
// whose child faults, hangs or exits on the way is fenced: refused in this process for good
// (the child's crash report, in the log, names the handler and the phase). So a handler whose
// static constructor dereferences null, or whose init never returns, costs one child process,
// not a worker. Versions fenced by the master (one crashed a worker while loading) are refused
// without a try.
#pragma once

#include "handler/load_gate.hpp"

#include <chrono>
#include <map>
#include <string>
#include <tuple>

namespace cspd {

struct SharedStats;

class HandlerVetting final : public LoadGate {
public:
    /// `stats`: the shared segment, for the master's fences (may be null). Without `try_versions`
    /// (--no-vetting) only those fences are checked.
    /// `workers` is what init is told as the worker count (its index there is CSP_VETTING).
    HandlerVetting(std::chrono::seconds init_timeout, const SharedStats* stats, bool try_versions = true,
                   unsigned workers = 1);

    GateVerdict check(const std::string& name, const std::filesystem::path& image, const HandlerFileIdentity& file,
                      const std::filesystem::path& config_folder) override;

private:
    using Key = std::tuple<std::string, std::uint64_t, std::uint64_t>;  // name, size, hash
    GateVerdict vet(const std::string& name, const std::filesystem::path& image,
                    const std::filesystem::path& config_folder);

    std::chrono::seconds init_timeout_;
    unsigned workers_;
    const SharedStats* stats_;
    bool try_versions_;
    std::map<Key, GateVerdict> fenced_;  // what failed here stays refused
};

/// The child's side: `argv` is {"__vet", NAME, FILE, CONFIG_FOLDER, WORKERS}. Reports on descriptor 3; the exit code
/// says nothing the report does not.
int run_vetting_child(int argc, char** argv);

}  // namespace cspd
