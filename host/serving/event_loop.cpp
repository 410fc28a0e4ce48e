#include "serving/event_loop.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "http/http1_response.hpp"
#include "serving/protocols/http1_session.hpp"
#include "serving/loop_inbox.hpp"
#include "http/forwarded_for.hpp"
#include "serving/proxy_header_wait.hpp"
#include "stats/shared_stats.hpp"
#include "tls/tls_contexts.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {
// The status address (--status-listen) is the operator's: it keeps this many connections of its
// own, whatever the public port holds.
constexpr std::size_t kStatusConnections = 32;
// Past --max-connections the public port still lets this many in, for one probe each
// (/-/healthy, /-/ready; anything else gets 503), closed within a second.
constexpr std::size_t kProbeReserve = 8;
}  // namespace

EventLoop::EventLoop(unsigned index, const LoopOptions& options, const StaticFiles& www)
    : index_(index), connection_limit_(std::max<std::size_t>(1, options.max_connections)),
      proxy_protocol_(options.proxy_protocol),
      work_blocks_(Http1Session::work_bytes()),
      // Only the flag's address, which the router keeps: context_ itself is built after it.
      router_(handlers_, www, options.routing, std::addressof(context_.draining)),
      context_{.io = io_,
               .limits = options.connection,
               .router = router_,
               .date = date_,
               .buffers = buffers_,
               .work_blocks = work_blocks_,
               .connections = connections_,
               .reads = read_watch_,
               .inbox = std::make_shared<LoopInbox>(io_),
               .client_limits = options.routing.client_limits,
               .trusted_proxies = options.routing.trusted_proxies},
      tick_timer_(io_), drain_warning_(io_) {
    if (options.access_log) {
        access_lines_.emplace(*options.access_log, options.worker, options.routing.trusted_proxies);
        context_.access = &*access_lines_;
    }
    connections_.on_emptied([this] {
        if (context_.draining && !taking_backlog_) {  // nothing left: let run() return now
            tick_timer_.cancel();
            drain_warning_.cancel();
        }
    });
}

EventLoop::~EventLoop() {
    // Called after run() has returned. Connections point back at this loop, so close
    // them and let their aborted waits run (and release them) while it is still whole.
    // Handlers told of it may finish their replies at once: those finishes still get in.
    context_.ending = true;
    connections_.for_each([](Connection& c) { c.close(); });
    for (const Listening& listening : listening_) listening.acceptor->close();
    tick_timer_.cancel();
    drain_warning_.cancel();
    io_.restart();
    io_.poll();
    // From now on a handler finishing a reply from its own thread finds the loop gone.
    context_.inbox->close();
    io_.restart();
    io_.poll();
}

void EventLoop::adopt_listener(int fd) { adopt(fd, Port::plain, ""); }

void EventLoop::adopt_status_listener(int fd) { adopt(fd, Port::status, " (status address)"); }

void EventLoop::adopt_tls_listener(int fd) { adopt(fd, Port::tls, " (HTTPS)"); }

void EventLoop::adopt(int fd, Port port, const char* what) {
    auto acceptor = std::make_unique<Acceptor>(io_, "loop " + std::to_string(index_) + what,
                                               [this, port](int accepted, const tcp::endpoint& peer) {
                                                   admit(accepted, peer, port);
                                               });
    acceptor->adopt(fd);
    listening_.push_back({port, std::move(acceptor)});
}

void EventLoop::use_certificates(std::shared_ptr<const TlsContexts> contexts) {
    post([this, contexts = std::move(contexts)]() mutable { context_.tls = std::move(contexts); });
}

void EventLoop::attach_stats(SharedStats& shared, LoopSlot& slot) {
    slot_ = &slot;
    context_.slot = &slot;
    handlers_.attach_stats(slot);
    connections_.attach_stats(slot);
    router_.attach_stats(shared, slot);
    if (access_lines_) access_lines_->count_dropped_in(slot.access_log_dropped);
}

void EventLoop::run() {
    // The master's watchdog aims SIGABRT at this thread when a handler overruns.
    install_thread_signal_stack();
    if (slot_) {
        slot_->thread_id.store(static_cast<std::int32_t>(::gettid()), std::memory_order_relaxed);
        set_crash_flag(&slot_->crashed);
    }
    context_.inbox->bind_to_this_thread();
    for (const Listening& listening : listening_) listening.acceptor->start();
    tick();
    io_.run();
}

void EventLoop::post(std::function<void()> fn) { asio::post(io_, std::move(fn)); }

void EventLoop::begin_drain(std::chrono::seconds deadline) {
    post([this, deadline] {
        context_.draining = true;
        // Handlers still owing answers hear of it a second before the deadline (halfway, if shorter).
        drain_warning_.expires_after(deadline > 2s ? deadline - 1s : std::chrono::milliseconds(deadline) / 2);
        drain_warning_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            spdlog::info("loop {}: drain deadline near; telling handlers that still owe answers", index_);
            connections_.for_each([](Connection& c) { c.warn_draining(); });
        });
        // Connections already queued on the socket reached a server that was open: take them
        // (they are answered with Connection: close) before closing it, which would reset them.
        taking_backlog_ = true;
        for (const Listening& listening : listening_)
            if (listening.port != Port::status) listening.acceptor->take_backlog();
        taking_backlog_ = false;
        for (const Listening& listening : listening_) listening.acceptor->close();
        if (connections_.empty()) {
            tick_timer_.cancel();
            drain_warning_.cancel();
        }
        connections_.for_each([](Connection& c) { c.on_drain(); });
    });
}

void EventLoop::stop() { io_.stop(); }

std::optional<Lane> EventLoop::lane_for(bool status_port) const {
    const auto open = [this](Lane lane) { return context_.open_in_lane[std::size_t(lane)]; };
    if (status_port) {
        if (open(Lane::status_port) < kStatusConnections) return Lane::status_port;
    } else if (open(Lane::public_port) < connection_limit_) {
        return Lane::public_port;
    } else if (open(Lane::probe_reserve) < kProbeReserve) {
        return Lane::probe_reserve;
    }
    return std::nullopt;
}

void EventLoop::admit(int fd, const tcp::endpoint& peer, Port port) {
    if (!proxy_protocol_ || port == Port::status) {
        admit_client(fd, peer, port);
        return;
    }
    // Waiting for a header is holding a connection: --max-connections bounds both together.
    if (proxy_waits_ + context_.open_in_lane[std::size_t(Lane::public_port)] >= connection_limit_) {
        ::close(fd);
        say_overloaded();
        return;
    }
    UniqueFd owned(fd);
    try {
        const auto wait = std::make_shared<ProxyHeaderWait>(
            read_watch_, owned.get(), peer, std::chrono::seconds(std::max(1u, context_.limits.header_timeout_s)),
            [this, port](int accepted, const tcp::endpoint& client, const tcp::endpoint& from) {
                // With --trust-proxy, only those peers may name a client: anyone else's header
                // is taken and set aside, and the peer stands.
                const ProxyTrust* trust = context_.trusted_proxies;
                const bool may_name = !trust || trust->empty() ||
                                      trust->trusts(IpAddress::from_sockaddr(from.data()));
                admit_client(accepted, may_name ? client : from, port, from.address().is_v6());
            },
            [this](const tcp::endpoint& from, const char* why) { say_no_proxy_header(from, why); }, proxy_waits_);
        owned.release();  // the wait owns it now
        wait->begin();
    } catch (const std::bad_alloc&) {
        spdlog::error("loop {}: out of memory for a new connection; closing it", index_);
    }
}

void EventLoop::say_no_proxy_header(const tcp::endpoint& peer, const char* why) {
    const std::uint32_t second = coarse_now_ms() / 1000;
    if (last_proxy_log_ == second) return;
    last_proxy_log_ = second;
    spdlog::warn("loop {}: closed a connection from {}: {}", index_, peer.address().to_string(), why);
}

void EventLoop::admit_client(int fd, const tcp::endpoint& peer, Port port, bool socket_v6) {
    if (context_.ending) {  // a PROXY header completed while the loop is being taken down
        ::close(fd);
        return;
    }
    const std::optional<Lane> lane = lane_for(port == Port::status);
    if (!lane) {
        if (port == Port::tls)
            ::close(fd);  // a cleartext 503 would be garbage to a TLS client
        else
            refuse_overload(fd);
        say_overloaded();
        return;
    }
    if (port == Port::tls && !context_.tls) {
        say_no_certificate();
        ::close(fd);
        return;
    }
    if (*lane == Lane::probe_reserve) say_overloaded();  // answered 503 unless it is a probe
    std::shared_ptr<Connection> connection;
    try {
        connection = std::make_shared<Http1Session>(context_, fd, peer, *lane, socket_v6);
    } catch (const std::bad_alloc&) {
        // Runs in a completion handler: nothing may leave it, or the loop (and the worker) ends.
        spdlog::error("loop {}: out of memory for a new connection; closing it", index_);
        ::close(fd);
        return;
    }
    if (port != Port::status) connection->charge_client();  // one refused says so once it has spoken
    if (port == Port::tls && !connection->begin_tls(context_.tls, slot_)) {
        connection->close();
        return;
    }
    connection->start();
}

void EventLoop::say_no_certificate() {
    const std::uint32_t second = coarse_now_ms() / 1000;
    if (last_no_certificate_log_ != second) {
        last_no_certificate_log_ = second;
        spdlog::error("loop {}: an HTTPS connection came but no certificate serves (see --certs); closing it", index_);
    }
}

void EventLoop::refuse_overload(int fd) {
    // Over --max-connections: a short, honest answer and a close, never a silent hang.
    std::string answer;
    write_http1(answer, error_response(HttpStatus::service_unavailable), ResponseFrame{.keep_alive = false},
                date_.now());
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
}

void EventLoop::say_overloaded() {
    const std::uint32_t second = coarse_now_ms() / 1000;
    if (last_overload_log_ != second) {  // at most once a second
        last_overload_log_ = second;
        spdlog::warn("loop {}: {} connections open, the most allowed; refusing new ones with 503 (probes still "
                     "answered)",
                     index_, context_.open_in_lane[std::size_t(Lane::public_port)]);
    }
}

void EventLoop::tick() {
    tick_timer_.expires_after(1s);
    tick_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        const std::uint32_t now = coarse_now_ms();
        connections_.for_each([now](Connection& c) { c.on_tick(now); });
        if (access_lines_) access_lines_->hand_over();  // what the last second answered, in one write
        // Once draining, the tick is the only work left besides connections: let run() return.
        if (context_.draining && connections_.empty()) {
            drain_warning_.cancel();
            return;
        }
        tick();
    });
}

}  // namespace cspd
