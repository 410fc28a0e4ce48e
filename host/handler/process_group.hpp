// A child process in a process group of its own, so that a time-out or a shutdown kills all it
// started (a compiler driver's cc1plus, as and ld), not just itself.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace cspd {

/// Starts `args` (argv[0] looked up in PATH) in a process group of its own -- so that a time-out
/// or a shutdown kills cc1plus, as and ld too, not just the driver -- its output into `log`; its
/// pid, or -1 with `error` set.
pid_t spawn_in_own_group(std::vector<std::string>& args, const std::filesystem::path& log, int& error);

/// Waits for `pid` to end (its waitpid status in `status`); false if `limit` passed first (its
/// group is then killed and reaped).
bool wait_within(pid_t pid, std::chrono::seconds limit, int& status);

}  // namespace cspd
