// What a connection may use of the event loop it lives on -- the reactor, the router,
// the read buffers, the clock of ticks -- and nothing else: a Connection never sees the
// EventLoop. Loop thread only.
#pragma once

#include "http/date_cache.hpp"
#include "routing/exchange.hpp"
#include "routing/router.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/connection_list.hpp"
#include "serving/read_watch.hpp"

#include <boost/asio/io_context.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace cspd {

/// What the command line says about each connection.
struct ConnectionLimits {
    std::size_t max_head_bytes = 8 * 1024;
    std::size_t max_body_bytes = 1024 * 1024;
    unsigned keepalive_timeout_s = 15;
    unsigned header_timeout_s = 10;
    unsigned handler_timeout_s = 10;  ///< a blocking call past it: its client gets 504 (0: never)
    unsigned pending_timeout_s = 60;  ///< a deferred reply past it: its client gets 504 (0: never)
    std::size_t memory_body_bytes = 1024 * 1024;  ///< larger bodies go to a temporary file (0: never)
    std::filesystem::path upload_dir;             ///< where (empty: the system's temporary folder)
    /// A body must keep coming at this rate, bytes/s, measured over each --header-timeout (0: any).
    unsigned min_body_rate = 500;
    /// A client that takes none of the bytes owed to it this long is closed (HTTP/1: the socket
    /// stays full; HTTP/2: the socket, or the flow-control window, stays shut).
    unsigned send_timeout_s = 30;
    bool http2 = true;              ///< h2c by prior knowledge is served (h2 by ALPN is the TLS contexts')
    unsigned h2_max_streams = 128;  ///< SETTINGS_MAX_CONCURRENT_STREAMS
    std::size_t ws_max_message = 1024 * 1024;  ///< a WebSocket message past it: close 1009
    unsigned ws_ping_interval_s = 30;          ///< a WebSocket that read nothing this long is pinged (0: never)
    unsigned ws_idle_timeout_s = 300;          ///< a WebSocket that read nothing this long is closed (0: never)
    bool ws_deflate = true;                    ///< permessage-deflate is accepted when a client offers it
};

class AccessLines;
class TlsContexts;
class BlockPool;
class BlockingPool;
struct LoopSlot;
class LoopInbox;

struct LoopContext {
    boost::asio::io_context& io;
    ConnectionLimits limits;
    Router& router;
    DateCache& date;
    BufferPool& buffers;
    BlockPool& work_blocks;  ///< for Http1Session::Work, see Http1Session::work_bytes()
    ConnectionList& connections;
    ReadWatch& reads;  ///< connections waiting to read (their transports' one way to wait)
    std::shared_ptr<LoopInbox> inbox{};  ///< onto this loop's thread, from any thread
    BlockingPool* blocking = nullptr;  ///< the worker's pool for blocking handlers
    LoopSlot* slot = nullptr;          ///< this loop's shared counters, if any
    AccessLines* access = nullptr;     ///< this loop's access log lines (--access-log), if any
    /// The certificates new HTTPS connections are served with; null while none can serve.
    std::shared_ptr<const TlsContexts> tls{};
    /// Where a connection builds its responses while it processes one read; empty between reads.
    std::string output{};
    bool draining = false;
    bool ending = false;  ///< the loop is being destroyed
    /// Open connections by the Lane that let them in.
    std::array<std::size_t, 3> open_in_lane{};
};

}  // namespace cspd
