#include "event_loop.hpp"

#include "connection.hpp"
#include "crash_reporter.hpp"
#include "http_response.hpp"
#include "shared_stats.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

EventLoop::EventLoop(unsigned index, const Config& config, const StaticFiles& www)
    : index_(index), config_(config), acceptor_(io_), status_acceptor_(io_), tick_timer_(io_), accept_retry_(io_),
      status_accept_retry_(io_),
      router_(handlers_, www, date_, config.probes, &draining_),
      connection_limit_(std::max<std::size_t>(1, (config.max_connections + config.loops_total() - 1) / config.loops_total())) {}

EventLoop::~EventLoop() {
    // Called after run() has returned. Connections point back at this loop, so close
    // them and let their aborted waits run (and release them) while it is still whole.
    for (Connection* c = connections_; c; c = c->next) c->close();
    boost::system::error_code ec;
    acceptor_.close(ec);
    status_acceptor_.close(ec);
    tick_timer_.cancel();
    accept_retry_.cancel();
    status_accept_retry_.cancel();
    io_.restart();
    io_.poll();
    for (char* buffer : free_buffers_) ::munmap(buffer, kReadBufferSize);
}

namespace {
/// Takes over a listening socket opened by open_listener, here or in the master.
void adopt(tcp::acceptor& acceptor, int fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // a worker's inherited socket: not for what it starts in turn
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
    acceptor.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    acceptor.non_blocking(true);
}

bool out_of_resources(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }
} // namespace

void EventLoop::adopt_listener(int fd) { adopt(acceptor_, fd); }

void EventLoop::adopt_status_listener(int fd) { adopt(status_acceptor_, fd); }

EventLoop::Accepted EventLoop::accept_one(tcp::acceptor& from, bool status_port) {
    for (;;) {
        sockaddr_storage peer{};
        socklen_t length = sizeof peer;
        const int fd = ::accept4(from.native_handle(), reinterpret_cast<sockaddr*>(&peer), &length,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? Accepted::none : Accepted::error;
        }
        if (connection_count_ >= connection_limit_) {
            refuse_overload(fd);
            return Accepted::connection;
        }
        tcp::endpoint endpoint;
        std::memcpy(endpoint.data(), &peer, std::min<std::size_t>(length, endpoint.capacity()));
        endpoint.resize(length);
        std::make_shared<Connection>(*this, fd, endpoint, status_port)->start();
        return Accepted::connection;
    }
}

void EventLoop::accept_status() {
    // Operators' traffic: few connections, so no batching; the loop's connection limit applies.
    status_acceptor_.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted || draining_) return;
        const auto retry_later = [this] {
            status_accept_retry_.expires_after(100ms);
            status_accept_retry_.async_wait([this](boost::system::error_code timer_ec) {
                if (!timer_ec && !draining_) accept_status();
            });
        };
        if (ec) {
            spdlog::warn("loop {}: waiting for status connections: {}", index_, ec.message());
            retry_later();
            return;
        }
        const Accepted taken = accept_one(status_acceptor_, true);
        if (taken == Accepted::error && out_of_resources(errno)) {
            // Out of descriptors: the socket stays readable, so retrying at once would spin.
            retry_later();
            return;
        }
        accept_status();
    });
}

void EventLoop::attach_stats(SharedStats& shared, LoopSlot& slot) {
    slot_ = &slot;
    handlers_.attach_stats(slot);
    router_.attach_stats(shared, slot, config_.status_endpoints, config_.quarantine_window_s,
                         !config_.status_listen.empty());
}

void EventLoop::run() {
    // The master's watchdog aims SIGABRT at this thread when a handler overruns.
    install_thread_signal_stack();
    if (slot_) {
        slot_->thread_id.store(static_cast<std::int32_t>(::gettid()), std::memory_order_relaxed);
        set_crash_flag(&slot_->crashed);
    }
    accept();
    if (status_acceptor_.is_open()) accept_status();
    tick();
    io_.run();
}

void EventLoop::post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void EventLoop::begin_drain() {
    post([this] {
        draining_ = true;
        // Connections already queued on the socket reached a server that was open: take them
        // (they are answered with Connection: close) before closing it, which would reset them.
        accept_backlog();
        boost::system::error_code ec;
        acceptor_.close(ec);
        status_acceptor_.close(ec);
        accept_retry_.cancel();
        status_accept_retry_.cancel();
        if (!connections_) tick_timer_.cancel();
        // on_drain may close and so unlink the current node: step first.
        for (Connection* c = connections_; c;) {
            Connection* next = c->next;
            c->on_drain();
            c = next;
        }
    });
}

void EventLoop::stop() { io_.stop(); }

void EventLoop::attach(Connection* c) {
    ++connection_count_;
    if (slot_) {
        bump(slot_->accepted_connections);
        slot_->open_connections.store(connection_count_, std::memory_order_relaxed);
    }
    c->next = connections_;
    if (connections_) connections_->prev = c;
    connections_ = c;
}

void EventLoop::detach(Connection* c) {
    --connection_count_;
    if (slot_) slot_->open_connections.store(connection_count_, std::memory_order_relaxed);
    if (c->prev) c->prev->next = c->next;
    else if (connections_ == c) connections_ = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = nullptr;
    if (draining_ && !connections_ && !taking_backlog_) tick_timer_.cancel();  // nothing left: let run() return now
}

void EventLoop::accept() {
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted || draining_) return;
        if (ec) {
            spdlog::warn("loop {}: waiting for connections: {}", index_, ec.message());
            after_accept_error();
            return;
        }
        accept_ready();
    });
}

void EventLoop::accept_ready() {
    // Take what is queued, a bounded batch at a time so one loop cannot starve its connections.
    for (int batch = 0; batch < 64; ++batch) {
        const Accepted taken = accept_one(acceptor_, false);
        if (taken == Accepted::connection) continue;
        if (taken == Accepted::none) break;
        const int err = errno;
        if (out_of_resources(err)) {
            // Out of descriptors or memory: retrying at once would spin. Said once a second at most.
            if (last_accept_error_log_ != now_s_) {
                last_accept_error_log_ = now_s_;
                spdlog::error("loop {}: accept: {}; pausing accepts for 100 ms", index_,
                              std::system_category().message(err));
            }
        } else {
            spdlog::warn("loop {}: accept: {}", index_, std::system_category().message(err));
        }
        after_accept_error();
        return;
    }
    accept();
}

void EventLoop::accept_backlog() {
    if (!acceptor_.is_open()) return;
    taking_backlog_ = true;
    for (int taken = 0; taken < 4096; ++taken) {
        const Accepted result = accept_one(acceptor_, false);
        if (result == Accepted::connection) continue;
        if (result == Accepted::error)
            spdlog::warn("loop {}: draining: accept: {}; connections still queued are reset", index_,
                         std::system_category().message(errno));
        break;
    }
    taking_backlog_ = false;
}

void EventLoop::refuse_overload(int fd) {
    // Over --max-connections: a short, honest answer and a close, never a silent hang.
    std::string answer;
    append_error(answer, 503, date_.now(), false, false);
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
    if (last_overload_log_ != now_s_) {  // at most once a second
        last_overload_log_ = now_s_;
        spdlog::warn("loop {}: {} connections open, the most allowed; refusing new ones with 503", index_,
                     connection_count_);
    }
}

// Read buffers are mapped, not malloc'ed: unmapping gives the memory back to the system at
// once, where freed heap chunks between live objects would keep an idle server's RSS high.
char* EventLoop::acquire_buffer() {
    if (!free_buffers_.empty()) {
        char* buffer = free_buffers_.back();
        free_buffers_.pop_back();
        return buffer;
    }
    void* memory = ::mmap(nullptr, kReadBufferSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    return static_cast<char*>(memory);
}

void EventLoop::release_buffer(char* buffer) {
    // Keep enough for the busy connections of a loaded loop; unmap the rest.
    if (free_buffers_.size() < kPooledBuffers)
        free_buffers_.push_back(buffer);
    else
        ::munmap(buffer, kReadBufferSize);
}

void EventLoop::after_accept_error() {
    // Out of descriptors: retrying at once would spin; wait for some to free up.
    accept_retry_.expires_after(100ms);
    accept_retry_.async_wait([this](boost::system::error_code ec) {
        if (!ec && !draining_) accept();
    });
}

void EventLoop::tick() {
    tick_timer_.expires_after(1s);
    tick_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        ++now_s_;
        for (Connection* c = connections_; c;) {
            Connection* next = c->next;
            c->on_tick(now_s_);
            c = next;
        }
        // Once draining, the tick is the only work left besides connections: let run() return.
        if (draining_ && !connections_) return;
        tick();
    });
}

} // namespace cspd
