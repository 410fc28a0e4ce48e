// The command line, read into what to do: serve with a Config (as the master, a worker
// or a single process), write a handler skeleton (`cspd new`), or hash files (`cspd hash`).
#pragma once

#include "process/config.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace cspd {

struct NewHandlerRequest {
    std::string name, lang = "cpp", dir = ".";
};

struct Invocation {
    Config config;
    std::optional<NewHandlerRequest> new_handler;  ///< `cspd new NAME`
    std::optional<std::vector<std::string>> hash_files;  ///< `cspd hash FILE...`
    int worker_index = -1;                         ///< >= 0: started by the master as this worker
    pid_t master_pid = 0;
    int worker_slot = -1;  ///< the first of its loops' slots (default: index × threads)
    std::optional<int> exit_code;  ///< set when parsing already decided (--help, --version, an error)
};

/// Parses argv. Defaults for --handlers and --www depend on where the binary runs from
/// (the build tree, or where it was installed).
Invocation parse_command_line(int argc, char** argv);

}  // namespace cspd
