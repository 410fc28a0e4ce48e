// What a worker gets from its master: descriptors at fixed numbers, and its place.
#pragma once

#include <sys/types.h>

namespace cspd {

/// Where a worker finds the descriptors its master hands down. Both compute the numbers from
/// the same command line: loops per worker, --bind addresses and --status-listen addresses.
struct WorkerFds {
    static constexpr int kStats = 3;  ///< the shared counters (memfd)
    static constexpr int kStore = 4;  ///< the store all workers share (memfd), with --kv-entries
    static constexpr int kClients = 5;  ///< the per-client counts all workers share (memfd)
    static constexpr int kFirstListener = 6;

    unsigned threads = 1;   ///< event loops per worker
    unsigned binds = 1;     ///< --bind addresses: each loop has a plain (and an HTTPS) socket on each
    unsigned statuses = 0;  ///< --status-listen addresses, served by the first loop

    /// Loop `loop`'s plain listening socket on bind address `bind`.
    constexpr int listener(unsigned bind, unsigned loop) const {
        return kFirstListener + static_cast<int>(bind * threads + loop);
    }
    /// The `i`th --status-listen socket.
    constexpr int status_listener(unsigned i) const { return listener(binds, 0) + static_cast<int>(i); }
    /// Loop `loop`'s HTTPS listening socket (--tls-port) on bind address `bind`.
    constexpr int tls_listener(unsigned bind, unsigned loop) const {
        return status_listener(statuses) + static_cast<int>(bind * threads + loop);
    }
    /// The channel to the key process (with --tls-port).
    constexpr int keys_channel() const { return tls_listener(binds, 0); }
    /// The session ticket keys every worker shares (with --tls-port).
    constexpr int ticket_keys() const { return keys_channel() + 1; }
    /// The highest number a worker receives.
    constexpr int highest() const { return ticket_keys(); }
};

struct WorkerRole {
    unsigned index = 0;       ///< which worker (its listening sockets)
    pid_t master = 0;
    unsigned first_slot = 0;  ///< its loops' slots: first_slot … first_slot + threads - 1
};

}  // namespace cspd
