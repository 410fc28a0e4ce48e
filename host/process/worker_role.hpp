// What a worker gets from its master: descriptors at fixed numbers, and its place.
#pragma once

#include <sys/types.h>

namespace cspd {

struct WorkerRole {
    static constexpr int kStatsFd = 3;          ///< the shared counters (memfd)
    static constexpr int kStoreFd = 4;          ///< the store all workers share (memfd), with --kv-entries
    static constexpr int kFirstListenerFd = 5;  ///< one listening socket per loop: 5, 6, …, then --status-listen's
    /// Loop `loop`'s plain listening socket.
    static constexpr int listener_fd(unsigned loop) { return kFirstListenerFd + static_cast<int>(loop); }
    /// The --status-listen socket (whether or not there is one, the number is kept for it).
    static constexpr int status_listener_fd(unsigned threads) { return kFirstListenerFd + static_cast<int>(threads); }
    /// Loop `loop`'s HTTPS listening socket (--tls-port).
    static constexpr int tls_listener_fd(unsigned threads, unsigned loop) {
        return status_listener_fd(threads) + 1 + static_cast<int>(loop);
    }
    /// The channel to the key process (with --tls-port).
    static constexpr int keys_channel_fd(unsigned threads) { return tls_listener_fd(threads, threads); }
    /// The session ticket keys every worker shares (with --tls-port).
    static constexpr int ticket_keys_fd(unsigned threads) { return keys_channel_fd(threads) + 1; }
    /// The highest number a worker receives.
    static constexpr int highest_fd(unsigned threads) { return ticket_keys_fd(threads); }
    unsigned index = 0;                         ///< which worker (its listening sockets)
    pid_t master = 0;
    unsigned first_slot = 0;                    ///< its loops' slots: first_slot … first_slot + threads - 1
};

}  // namespace cspd
