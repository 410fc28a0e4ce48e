// The sandbox every serving process enters once its set-up is done (workers, the single
// process, and the vetting processes): what handler code may touch, enforced by the kernel.
//  - File rules (Landlock, process/file_rules): read the handlers folder, www/, the system's
//    programs and libraries, /etc's world-readable files and this process's own /proc; read and
//    write the process's private folder, the master's server folder, --upload-dir and --data-dir;
//    append to the log files; never --certs. Signals reach only the process's own domain.
//  - The call filter (seccomp, process/call_filter): exec (unless --allow-exec), tracing, other
//    processes' memory, mounts, namespaces, bpf, keys, modules, raw sockets... return EPERM,
//    blamed on the handler that called and counted.
// Order matters: the file rules bind only the thread that enters them (and what it starts later),
// so they come before the loops' threads; the vetting fork server is started between the two, so
// that it shares the file rules (and can be signalled) and is still allowed to be executed.
#pragma once

#include "process/config.hpp"
#include "process/file_rules.hpp"
#include "process/sandbox_needs.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace cspd {

struct SandboxDenials;
struct SandboxFacts;

/// Says once, at start, what the sandbox does on this kernel: loudly what it cannot.
void announce_sandbox(const SandboxConfig& config);

/// What one serving process may do: every handler's share, and the union of what its handlers
/// declared when it started (process/sandbox_needs).
struct SandboxPolicy {
    FileRules rules;
    bool exec = false;     ///< programs may be started (--allow-exec, --compile, or a declaration)
    bool network = true;   ///< false when every handler declared it needs none
    SandboxNeeds declared; ///< the handlers' own declarations, granted above
    std::vector<std::filesystem::path> never;  ///< what no declaration reaches (--certs)

    /// Why this process cannot take handler `name` (file `file`) as it is declared: empty if it
    /// can; `grantable` tells whether a process started now could (else it is refused for good).
    std::string refuses(const std::filesystem::path& folder, const std::string& name, const std::filesystem::path& file,
                        bool& grantable) const;
};

/// The policy of a serving process of `config`, `private_folder` being its own.
SandboxPolicy serving_policy(const Config& config, const std::filesystem::path& private_folder);

/// Enters the file rules (a no-op when the sandbox is off or log-only); logs what failed. What
/// it entered is written to `facts`.
void enter_file_rules(const Config& config, const SandboxPolicy& policy, SandboxFacts& facts);

/// The call filter's mode for a vetting fork server ("deny", "exec" or "log", and ",nonet"); empty: none.
std::string vetting_call_filter(const SandboxConfig& config, const SandboxPolicy& policy);
/// Installs the call filter a vetting fork server was told (`mode` from vetting_call_filter()).
bool install_vetting_call_filter(std::string_view mode, std::string& why);

/// Installs the call filter on every thread of this process; denials are counted in `table`.
void enter_call_filter(const Config& config, const SandboxPolicy& policy, SandboxDenials* table, SandboxFacts& facts);

}  // namespace cspd
