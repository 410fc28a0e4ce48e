// The supervisor. It opens the listening sockets and the shared counters, starts
// --workers worker processes (each a Server with its own loops, handler table and
// watcher), and keeps them running:
//  - a worker that dies is replaced at once (a worker that keeps dying, with back-off);
//    its listening sockets stay open here, so connections queued on them wait for the
//    replacement instead of being reset;
//  - a worker that dies while a handler runs is a crash of that handler version; K of
//    them within T seconds quarantine the version in every worker: the version it replaced
//    serves again (rollback), or, with none (or --no-rollback), 503 + Retry-After until a
//    new file replaces it;
//  - a handler call that outlives --handler-timeout is aborted (watchdog) and counts
//    as a crash;
//  - signals: TERM/INT drain and exit 0, QUIT stops at once, HUP and USR1 are passed on.
#pragma once

#include "process/config.hpp"

#include <string>
#include <vector>

namespace cspd {

class Master {
public:
    /// `argv` is the command line the workers are started with (plus their role).
    Master(Config config, std::vector<std::string> argv);

    /// Supervises until told to stop. Returns the exit code. Throws on a set-up failure.
    int run();

private:
    Config config_;
    std::vector<std::string> argv_;
};

}  // namespace cspd
