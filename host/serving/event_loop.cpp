#include "serving/event_loop.hpp"

#include "common/crash_context.hpp"
#include "http/response.hpp"
#include "serving/connection.hpp"
#include "stats/shared_stats.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

EventLoop::EventLoop(unsigned index, const LoopOptions& options, const StaticFiles& www)
    : index_(index), connection_limit_(std::max<std::size_t>(1, options.max_connections)),
      router_(handlers_, www, date_, options.routing, &context_.draining), context_{io_,      options.connection,
                                                                                    router_,  date_,
                                                                                    buffers_, connections_,
                                                                                    {},       false,
                                                                                    0},
      acceptor_(io_, "loop " + std::to_string(index),
                [this](int fd, const tcp::endpoint& peer) { admit(fd, peer, false); }),
      status_acceptor_(io_, "loop " + std::to_string(index) + " (status address)",
                       [this](int fd, const tcp::endpoint& peer) { admit(fd, peer, true); }),
      tick_timer_(io_) {
    connections_.on_emptied([this] {
        if (context_.draining && !taking_backlog_) tick_timer_.cancel();  // nothing left: let run() return now
    });
}

EventLoop::~EventLoop() {
    // Called after run() has returned. Connections point back at this loop, so close
    // them and let their aborted waits run (and release them) while it is still whole.
    connections_.for_each([](Connection& c) { c.close(); });
    acceptor_.close();
    status_acceptor_.close();
    tick_timer_.cancel();
    io_.restart();
    io_.poll();
}

void EventLoop::adopt_listener(int fd) { acceptor_.adopt(fd); }

void EventLoop::adopt_status_listener(int fd) { status_acceptor_.adopt(fd); }

void EventLoop::attach_stats(SharedStats& shared, LoopSlot& slot) {
    slot_ = &slot;
    handlers_.attach_stats(slot);
    connections_.attach_stats(slot);
    router_.attach_stats(shared, slot);
}

void EventLoop::run() {
    // The master's watchdog aims SIGABRT at this thread when a handler overruns.
    install_thread_signal_stack();
    if (slot_) {
        slot_->thread_id.store(static_cast<std::int32_t>(::gettid()), std::memory_order_relaxed);
        set_crash_flag(&slot_->crashed);
    }
    acceptor_.start();
    status_acceptor_.start();
    tick();
    io_.run();
}

void EventLoop::post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void EventLoop::begin_drain() {
    post([this] {
        context_.draining = true;
        // Connections already queued on the socket reached a server that was open: take them
        // (they are answered with Connection: close) before closing it, which would reset them.
        taking_backlog_ = true;
        acceptor_.take_backlog();
        taking_backlog_ = false;
        acceptor_.close();
        status_acceptor_.close();
        if (connections_.empty()) tick_timer_.cancel();
        connections_.for_each([](Connection& c) { c.on_drain(); });
    });
}

void EventLoop::stop() { io_.stop(); }

void EventLoop::admit(int fd, const tcp::endpoint& peer, bool status_port) {
    if (connections_.size() >= connection_limit_) {
        refuse_overload(fd);
        return;
    }
    std::shared_ptr<Connection> connection;
    try {
        connection = std::make_shared<Connection>(context_, fd, peer, status_port);
    } catch (const std::bad_alloc&) {
        // Runs in a completion handler: nothing may leave it, or the loop (and the worker) ends.
        spdlog::error("loop {}: out of memory for a new connection; closing it", index_);
        ::close(fd);
        return;
    }
    connection->start();
}

void EventLoop::refuse_overload(int fd) {
    // Over --max-connections: a short, honest answer and a close, never a silent hang.
    std::string answer;
    append_error(answer, HttpStatus::service_unavailable, date_.now(), false, false);
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    if (last_overload_log_ != context_.now) {  // at most once a second
        last_overload_log_ = context_.now;
        spdlog::warn("loop {}: {} connections open, the most allowed; refusing new ones with 503", index_,
                     connections_.size());
    }
}

void EventLoop::tick() {
    tick_timer_.expires_after(1s);
    tick_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        const std::uint32_t now = ++context_.now;
        connections_.for_each([now](Connection& c) { c.on_tick(now); });
        // Once draining, the tick is the only work left besides connections: let run() return.
        if (context_.draining && connections_.empty()) return;
        tick();
    });
}

}  // namespace cspd
