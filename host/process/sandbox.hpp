// The kernel's share of keeping handler code in its place: a seccomp filter that denies what no
// request handler needs -- running programs, tracing or reading other processes, mounts and
// namespaces, kernel keys and modules, bpf, perf, userfaultfd, personality, io_uring, raw and
// packet sockets -- installed on every thread of a process once its set-up is done. TCP, UDP and
// Unix sockets stay: handlers talk to databases.
//
// A denied call is trapped (SIGSYS) rather than killing: the thread's running-handler mark (the
// crash reporter's) names the handler, one line a handler and call is logged, the denials are
// counted, and the call returns EPERM -- or, in log-only mode, runs after all (an operator trying
// the sandbox on existing handlers). A handler cannot silence it: setting SIGSYS's action is denied.
//
// Work in progress (issue 45, first step): not yet installed by the workers; see the note.
#pragma once

#include <cstdint>
#include <string>

namespace cspd {

struct SandboxSupport {
    bool seccomp = false;  ///< seccomp filters (SECCOMP_SET_MODE_FILTER, with TSYNC)
    int landlock = 0;      ///< Landlock's ABI version; 0: none
};

/// What this kernel offers (asks it; no side effect).
SandboxSupport probe_sandbox() noexcept;

struct SandboxOptions {
    bool log_only = false;    ///< --sandbox-log-only: report, never deny
    bool allow_exec = false;  ///< --allow-exec: execve, execveat and vfork stay (and --compile needs them)
};

/// Installs the filter on every thread of this process, and the SIGSYS handler that blames and
/// logs. False, with `why`, if the kernel refuses (nothing is installed then). Once per process.
bool install_sandbox(const SandboxOptions& options, std::string& why);

/// Calls denied (or, log-only, reported) in this process so far.
std::uint64_t sandbox_denials() noexcept;

}  // namespace cspd
