// The system-call half of the sandbox: a seccomp filter that denies what no request handler
// needs -- running programs, tracing or reading other processes, mounts and namespaces, kernel
// keys and modules, bpf, perf, userfaultfd, personality, io_uring, sockets but Unix, IP streams
// and datagrams and netlink's route; owners, modes and extended attributes of files by path --
// installed on every thread of a process once its set-up is done. TCP, UDP and Unix sockets stay:
// handlers talk to databases.
//
// A denied call is trapped (SIGSYS) rather than killing: the thread's running-handler mark (the
// crash reporter's) names the handler, one line a handler and call is logged per process, the
// denial is counted (in the shared table, when there is one), and the call returns EPERM -- or,
// in log-only mode, runs after all (an operator trying the sandbox on existing handlers). A
// handler cannot silence it: setting SIGSYS's action is denied.
//
// The filter is a binary search over the call numbers it knows (about seven comparisons a call),
// not a list: every system call of a serving process passes through it.
#pragma once

#include <cstdint>
#include <string>

namespace cspd {

struct SandboxDenials;

/// This kernel takes seccomp filters (asks it; no side effect).
bool seccomp_available() noexcept;

struct CallFilterOptions {
    bool log_only = false;    ///< --sandbox-log-only: report, never deny
    bool allow_exec = false;  ///< execve, execveat and vfork stay (--allow-exec, --compile)
    bool no_network = false;  ///< no new IPv4 or IPv6 socket (every handler declared it needs none)
    bool deny_path_truncate = false;  ///< truncate() by path (the file rules check it from Landlock 3 on)
};

/// Where denials are counted from now on (the shared segment's table); null: only logged.
void count_denials_in(SandboxDenials* table) noexcept;

/// Installs the filter on every thread of this process, and the SIGSYS handler that blames and
/// logs. False, with `why`, if the kernel refuses (nothing is installed then). Once per process.
bool install_call_filter(const CallFilterOptions& options, std::string& why);

/// Calls denied (or, log-only, reported) in this process so far.
std::uint64_t call_filter_denials() noexcept;

}  // namespace cspd
