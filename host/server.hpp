// One serving process: its event loops (threads, shared nothing), the handler watcher
// and signal handling on a control thread. It runs either alone (--workers 0, for
// debugging: no supervision) or as one worker under the master (see master.hpp).
#pragma once

#include "config.hpp"

#include <sys/types.h>

#include <optional>

namespace cspd {

/// What a worker gets from its master: descriptors at fixed numbers, and its place.
struct WorkerRole {
    static constexpr int kStatsFd = 3;          ///< the shared counters (memfd)
    static constexpr int kFirstListenerFd = 4;  ///< one listening socket per loop: 4, 5, …, then --status-listen's
    unsigned index = 0;                         ///< which worker: its slots are index*threads …
    pid_t master = 0;
};

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

} // namespace cspd
