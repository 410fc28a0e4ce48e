// What a connection may use of the event loop it lives on -- the reactor, the router,
// the read buffers, the clock of ticks -- and nothing else: a Connection never sees the
// EventLoop. Loop thread only.
#pragma once

#include "http/date_cache.hpp"
#include "routing/exchange.hpp"
#include "routing/router.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/connection_limits.hpp"
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


class AccessLines;
class TlsContexts;
class BlockPool;
class BlockingPool;
struct LoopSlot;
class LoopInbox;
class ClientLimits;
struct ProxyTrust;

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
    ClientLimits* client_limits = nullptr;            ///< --client-*: the host's per-client counts, if any
    const ProxyTrust* trusted_proxies = nullptr;   ///< --trust-proxy's peers, if any
    /// Open connections by the Lane that let them in.
    std::array<std::size_t, 3> open_in_lane{};
};

}  // namespace cspd
