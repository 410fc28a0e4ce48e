// One serving process: its event loops (threads, shared nothing), the handler watcher
// and signal handling on a control thread. It runs either alone (--workers 0, for
// debugging: no supervision) or as one worker under the master (see master.hpp).
#pragma once

#include "process/config.hpp"
#include "process/worker_role.hpp"

#include <optional>

namespace cspd {

class Server {
public:
    Server(Config config, std::optional<WorkerRole> role = std::nullopt);

    /// Serves until SIGINT/SIGTERM (drain) or SIGQUIT (at once). SIGHUP re-reads the
    /// handlers folder; SIGUSR1 reopens --log-file. Returns the process exit code.
    /// Throws on a set-up failure (port in use, missing folder).
    int run();

private:
    Config config_;
    std::optional<WorkerRole> role_;
};

}  // namespace cspd
