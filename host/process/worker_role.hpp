// What a worker gets from its master: descriptors at fixed numbers, and its place.
#pragma once

#include <sys/types.h>

namespace cspd {

struct WorkerRole {
    static constexpr int kStatsFd = 3;          ///< the shared counters (memfd)
    static constexpr int kStoreFd = 4;          ///< the store all workers share (memfd), with --kv-entries
    static constexpr int kFirstListenerFd = 5;  ///< one listening socket per loop: 5, 6, …, then --status-listen's
    unsigned index = 0;                         ///< which worker (its listening sockets)
    pid_t master = 0;
    unsigned first_slot = 0;                    ///< its loops' slots: first_slot … first_slot + threads - 1
};

}  // namespace cspd
