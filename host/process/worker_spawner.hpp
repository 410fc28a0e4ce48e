// Starts worker processes: /proc/self/exe with the master's command line plus the
// worker's role, the shared counters and the worker's listening sockets (plain, status, HTTPS) dup'ed to the
// fixed numbers of WorkerRole, and the lifecycle signals blocked until the worker has
// its handlers for them. It owns those descriptors for the master.
#pragma once

#include "process/worker_role.hpp"
#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace cspd {

struct Config;
class SharedStatsMapping;
class SharedStore;
class ClientTable;

class WorkerSpawner {
public:
    /// Opens the listening sockets (--port, --status-listen) here, so that they outlive any
    /// worker, and takes copies of the shared counters' and store's descriptors. `port` gets the
    /// port bound (--port 0: the first socket picks, the rest join it), `tls_port` --tls-port's.
    /// Throws on failure.
    static WorkerSpawner open(const Config& config, const std::vector<std::string>& argv,
                              const SharedStatsMapping& shared, const std::optional<SharedStore>& store,
                              const ClientTable& clients, unsigned short& port,
                              unsigned short& tls_port);

    /// `listeners` holds, per worker, `fds.binds` × `fds.threads` sockets (by bind address, then
    /// loop), and so does `tls_listeners` if not empty; `status_listeners` holds `fds.statuses`;
    /// `store` may be empty.
    WorkerSpawner(std::vector<std::string> argv, WorkerFds fds, UniqueFd stats, UniqueFd store, UniqueFd clients,
                  std::vector<UniqueFd> listeners, std::vector<UniqueFd> status_listeners,
                  std::vector<UniqueFd> tls_listeners);

    /// Moves `fd` above the numbers workers receive (`fds`), so that no dup2 at spawn overwrites
    /// a descriptor another dup2 still has to read. Throws on failure.
    static UniqueFd above_worker_fds(UniqueFd fd, const WorkerFds& fds);

    /// Starts worker `index`; its pid, or -1 with the reason in `error` (an errno value).
    /// `keys_channel`, if valid, is its channel to the key process.
    /// `ticket_keys`, if valid, the session ticket keys' segment (above the workers' numbers too).
    pid_t spawn(unsigned index, unsigned first_slot, int& error, int keys_channel = -1, int ticket_keys = -1) const;

    /// Closes the master's copies of the listening sockets: once the workers have closed
    /// theirs too, the port is free.
    void close_listeners();

private:
    std::vector<std::string> argv_;
    WorkerFds fds_;
    UniqueFd stats_;
    UniqueFd store_;
    UniqueFd clients_;
    std::vector<UniqueFd> listeners_;
    std::vector<UniqueFd> status_listeners_;
    std::vector<UniqueFd> tls_listeners_;
};

}  // namespace cspd
