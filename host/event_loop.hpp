// One event loop: an io_context run by one thread, its own SO_REUSEPORT
// acceptor, its own handler table, router, date cache and connections.
// Shared nothing with other loops; the only way in from outside is post().
#pragma once

#include "config.hpp"
#include "date_cache.hpp"
#include "handler_table.hpp"
#include "router.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <vector>
#include <cstdint>
#include <functional>
#include <memory>

namespace cspd {

class Connection;
class StaticFiles;
struct LoopSlot;
struct SharedStats;

class EventLoop {
public:
    EventLoop(unsigned index, const Config& config, const StaticFiles& www);
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    /// Takes over a listening socket (see open_listener); the loop closes it when it drains.
    void adopt_listener(int fd);
    /// Takes over the --status-listen socket: its connections may ask for /-/status and /metrics.
    void adopt_status_listener(int fd);
    /// Counts into `slot` of the shared counters; `shared` also answers /metrics and /-/status.
    void attach_stats(SharedStats& shared, LoopSlot& slot);

    /// Runs until stop(), or until drained. Call from the loop's own thread.
    void run();

    /// Thread-safe: runs `fn` on this loop's thread.
    void post(std::function<void()> fn);
    /// Thread-safe: stop accepting; close idle connections; finish the rest.
    void begin_drain();
    /// Thread-safe: stop now, whatever is in flight.
    void stop();

    // --- for Connection, on the loop thread only ---
    boost::asio::io_context& io() { return io_; }
    Router& router() { return router_; }
    HandlerTable& handlers() { return handlers_; }
    DateCache& date() { return date_; }
    /// Where a connection builds its responses while it processes one read; empty between reads.
    std::string& output() { return output_; }
    static constexpr std::size_t kReadBufferSize = 16 * 1024;
    static constexpr std::size_t kPooledBuffers = 32;
    /// A read buffer of kReadBufferSize bytes, from this loop's free list.
    char* acquire_buffer();
    void release_buffer(char* buffer);
    const Config& config() const { return config_; }
    bool draining() const { return draining_; }
    /// Seconds since the loop started, advanced by the once-a-second tick.
    std::uint32_t now() const { return now_s_; }
    void attach(Connection* c);
    void detach(Connection* c);

private:
    /// What one accept4 on a listener came to; after `error`, errno says why.
    enum class Accepted { connection, none, error };
    /// Takes one queued connection (refused with a 503 past the limit).
    Accepted accept_one(boost::asio::ip::tcp::acceptor& from, bool status_port);
    void accept();
    void accept_ready();
    void accept_status();
    void accept_backlog();
    void refuse_overload(int fd);
    void tick();
    void after_accept_error();

    unsigned index_;
    const Config& config_;
    // Sockets and timers are touched only by this loop's thread; only post() comes from others.
    boost::asio::io_context io_{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::acceptor status_acceptor_;  // open only with --status-listen, on one loop per process
    boost::asio::steady_timer tick_timer_;
    boost::asio::steady_timer accept_retry_;
    boost::asio::steady_timer status_accept_retry_;
    HandlerTable handlers_;
    DateCache date_;
    Router router_;
    std::string output_;
    std::vector<char*> free_buffers_;  // recycled read buffers (mapped)
    Connection* connections_ = nullptr;       // intrusive list of live connections
    std::size_t connection_count_ = 0;
    std::size_t connection_limit_;            // this loop's share of --max-connections
    std::uint32_t last_overload_log_ = ~0u;
    std::uint32_t last_accept_error_log_ = ~0u;
    std::uint32_t now_s_ = 0;
    bool draining_ = false;
    bool taking_backlog_ = false;  // accept_backlog is running: an empty list does not end the loop yet
    LoopSlot* slot_ = nullptr;
};

} // namespace cspd
