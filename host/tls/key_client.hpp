// A worker's way to the key process. The master gives the worker one channel (a Unix socket
// whose other end the key process holds); each thread that needs the key process opens its
// own connection by sending one end of a new socket pair over that channel, then asks on it,
// one request at a time. A connection that fails or times out is dropped; for a second after,
// that thread's requests fail at once (the key process is restarting: handshakes fail fast
// rather than stall the loop).
#pragma once

#include "tls/key_protocol.hpp"

#include <optional>
#include <string_view>

namespace cspd {

class KeyClient {
public:
    /// The channel for this process (taken over; close-on-exec is set).
    static void set_channel(int fd);
    static bool has_channel();

    /// One request and its answer; nullopt if the key process cannot be reached in `timeout_ms`.
    static std::optional<key_protocol::Frame> ask(key_protocol::Op op, std::uint64_t id, std::string_view payload,
                                                  int timeout_ms);

    /// Whether a signature this thread asked for failed since the last call (for counting why
    /// a handshake failed).
    static bool take_sign_failure();
    /// Records one (the proxy key does, on a refusal or no answer).
    static void note_sign_failure();
};

}  // namespace cspd
