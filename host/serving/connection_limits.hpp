// What the command line says about each connection, by protocol (as h2o's globalconf.http1 and
// .http2): Config owns one, filled by the command line, and each loop a copy. Each default is
// written here once.
#pragma once

#include <cstddef>
#include <filesystem>

namespace cspd {

struct Http2Limits {
    bool enabled = true;                               ///< h2c by prior knowledge (h2 by ALPN is the TLS contexts')
    unsigned max_streams = 128;                        ///< SETTINGS_MAX_CONCURRENT_STREAMS
    std::size_t answer_budget = 2 * 1024 * 1024;       ///< built answers a connection holds unsent; past it, requests wait
};

struct WebSocketLimits {
    std::size_t max_message = 1024 * 1024;  ///< a message past it (reassembled, or published): close 1009
    unsigned ping_interval_s = 30;          ///< a conversation that read nothing this long is pinged (0: never)
    unsigned idle_timeout_s = 300;          ///< a conversation that read nothing this long is closed (0: never)
    bool deflate = true;                    ///< permessage-deflate is accepted when a client offers it
};

struct ConnectionLimits {
    std::size_t max_head_bytes = 8 * 1024;
    std::size_t max_body_bytes = 1024 * 1024;
    std::size_t memory_body_bytes = 1024 * 1024;  ///< larger bodies go to a temporary file (0: never)
    std::filesystem::path upload_dir;             ///< where (empty: the system's temporary folder)
    unsigned keepalive_timeout_s = 15;
    unsigned header_timeout_s = 10;
    /// A body must keep coming at this rate, bytes/s, measured over each --header-timeout (0: any).
    unsigned min_body_rate = 500;
    /// A client that takes none of the bytes owed to it this long is closed (HTTP/1: the socket
    /// stays full; HTTP/2: the socket, or the flow-control window, stays shut).
    unsigned send_timeout_s = 30;
    /// A handler call past it: a loop call kills its worker (the master's watchdog), a blocking
    /// call's client gets 504 (0: never).
    unsigned handler_timeout_s = 10;
    unsigned pending_timeout_s = 60;  ///< a deferred reply past it: its client gets 504 (0: never)
    Http2Limits http2;
    WebSocketLimits websocket;
};

}  // namespace cspd
