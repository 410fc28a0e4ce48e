// One event loop: an io_context run by one thread, its acceptors, its own handler
// table, router, reply cache, date cache, read buffers and connections. What it shares
// with the process's other loops is made for it: the StaticFiles (const; its WwwWatch
// stamps staleness in an atomic), the BlockingPool (calls go in under its lock, answers
// come back through the loop's inbox), and its own slot of the shared counters. Other threads reach
// it through post(), begin_drain() and stop() only; the adopt_/attach_ calls come before
// run(). Connections see only its LoopContext.
#pragma once

#include "handler/table.hpp"
#include "http/date_cache.hpp"
#include "routing/router.hpp"
#include "serving/access_log.hpp"
#include "serving/acceptor.hpp"
#include "serving/block_pool.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/connection_list.hpp"
#include "serving/loop_context.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace cspd {

class StaticFiles;
class TlsContexts;
struct LoopSlot;
struct SharedStats;

struct LoopOptions {
    ConnectionLimits connection;
    BuiltinOptions routing;
    std::size_t max_connections = 10000;  ///< this loop's share of --max-connections
    AccessLog* access_log = nullptr;      ///< where the loop's lines go (--access-log), or none
    bool proxy_protocol = false;          ///< --proxy-protocol: the public ports' connections open with a PROXY header
    unsigned worker = 0;                  ///< which worker the loop is in, for its access log lines
};

class EventLoop {
public:
    EventLoop(unsigned index, const LoopOptions& options, const StaticFiles& www);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    /// Takes over a listening socket (see open_listener), one per --bind address; the loop closes
    /// it when it drains.
    void adopt_listener(int fd);
    /// Takes over the --status-listen socket: its connections may ask for /-/status and /metrics.
    void adopt_status_listener(int fd);
    /// Takes over an HTTPS listening socket (--tls-port): its connections speak TLS.
    void adopt_tls_listener(int fd);
    /// /-/status and /metrics report the certificates on `board` (before run()).
    void attach_tls_status(const TlsStatusBoard& board) { router_.attach_tls_status(board); }
    /// Thread-safe: new HTTPS connections are served with `contexts` (null: refused, none serves).
    void use_certificates(std::shared_ptr<const TlsContexts> contexts);
    /// Counts into `slot` of the shared counters; `shared` also answers /metrics and /-/status.
    void attach_stats(SharedStats& shared, LoopSlot& slot);

    /// Runs until stop(), or until drained. Call from the loop's own thread.
    void run();

    /// Thread-safe: runs `fn` on this loop's thread.
    void post(std::function<void()> fn);
    /// Thread-safe: stop accepting; close idle connections; finish the rest. Handlers still
    /// owing answers are told shortly before `deadline` (from now), when the loop will be stopped.
    void begin_drain(std::chrono::seconds deadline);
    /// Thread-safe: stop now, whatever is in flight.
    void stop();

    /// This loop's live handlers: loop thread only (updates arrive through post()).
    HandlerTable& handlers() { return handlers_; }
    /// Installs `version` as `name`'s (null removes it) and forgets the old one's cached replies.
    void set_handler(const std::string& name, std::shared_ptr<const HandlerVersion> version, bool count) {
        handlers_.set(name, std::move(version), count);
        router_.forget_cached(name);
    }

    /// Blocking handlers' calls run on `pool` (set up before run()); without one they get 503.
    void attach_blocking_pool(BlockingPool& pool) { context_.blocking = &pool; }

private:
    enum class Port : std::uint8_t { plain, tls, status };
    /// A listening socket of `port`'s kind; `what` follows the loop's name in its log lines.
    void adopt(int fd, Port port, const char* what);
    /// A socket from one of the acceptors: with --proxy-protocol, its header first; then admit_client.
    void admit(int fd, const boost::asio::ip::tcp::endpoint& peer, Port port);
    /// A Connection for `client`, or a 503 past the limit. `socket_v6`: the socket is IPv6 (a
    /// PROXY header may name a client of the other family).
    void admit_client(int fd, const boost::asio::ip::tcp::endpoint& client, Port port, bool socket_v6 = false);
    /// At most once a second: a connection closed for its PROXY header (`why`).
    void say_no_proxy_header(const boost::asio::ip::tcp::endpoint& peer, const char* why);
    /// At most once a second: an HTTPS connection came while no certificate serves.
    void say_no_certificate();
    /// The budget a new connection falls in, or nullopt: refused.
    std::optional<Lane> lane_for(bool status_port) const;
    /// At most once a second: the public port is full.
    void say_overloaded();
    void refuse_overload(int fd);
    void tick();

    unsigned index_;
    std::size_t connection_limit_;
    bool proxy_protocol_;
    std::size_t proxy_waits_ = 0;  // connections waiting for their PROXY header
    std::uint32_t last_proxy_log_ = ~0u;
    // Sockets and timers are touched only by this loop's thread; only post() comes from others.
    boost::asio::io_context io_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    HandlerTable handlers_;
    DateCache date_;
    BufferPool buffers_;
    BlockPool work_blocks_;  // before connections_: outlives every connection's Work
    ConnectionList connections_;
    ReadWatch read_watch_{io_};
    Router router_;  // reads context_.draining for /-/ready
    std::optional<AccessLines> access_lines_;  // with --access-log; outlives the connections
    LoopContext context_;
    // Its sockets: one per --bind address (and per address again with --tls-port), and on one
    // loop per process, one per --status-listen address.
    struct Listening {
        Port port;
        std::unique_ptr<Acceptor> acceptor;
    };
    std::vector<Listening> listening_;
    boost::asio::steady_timer tick_timer_;
    boost::asio::steady_timer drain_warning_;
    std::uint32_t last_overload_log_ = ~0u;
    std::uint32_t last_no_certificate_log_ = ~0u;
    bool taking_backlog_ = false;  // the drain takes the backlog: an empty list does not end the loop yet
    LoopSlot* slot_ = nullptr;
};

}  // namespace cspd
