// One client connection: a transport carrying a protocol session. This is what the loop keeps
// in its ConnectionList and asks to start, tick, drain and close, whatever the connection
// speaks; each protocol (HTTP/1, HTTP/2, and a WebSocket after HTTP/1's upgrade) is a class
// derived from it, the sibling of the others.
//
// Lifetime: shared_ptr. Every wait of its transport holds it (TransportUser::share), and so
// does every pending async operation of its session; it dies when none does. The loop's
// ConnectionList only points at it.
#pragma once

#include "common/ip_address.hpp"
#include "routing/exchange.hpp"
#include "serving/connection_list.hpp"
#include "serving/transport/transport.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>

namespace cspd {

struct LoopContext;

class Connection : public TransportUser, public std::enable_shared_from_this<Connection> {
public:
    /// Takes ownership of `fd`, a non-blocking accepted socket, and joins the loop's list.
    /// `lane`: the budget that let it in (the loop counts each; see LoopContext::open_in_lane).
    /// `peer` is the client (a PROXY header's, with --proxy-protocol); `socket_v6` says the socket
    /// itself is IPv6 when `peer` is not (the balancer's connection may be of the other family).
    Connection(LoopContext& loop, int fd, const boost::asio::ip::tcp::endpoint& peer, Lane lane,
               bool socket_v6 = false) noexcept;
    /// Takes over `from`'s transport, peer and lane (the protocol changes: HTTP/1 to HTTP/2);
    /// `from` is left with a closed transport, and stays in the loop's list no longer than it lives.
    struct TakeOver {};
    Connection(TakeOver, Connection& from) noexcept;
    virtual ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// Begins: reads what has come with the connection, or waits for it.
    virtual void start() = 0;
    /// Once a second, with coarse_now_ms(): enforce timeouts, give back what an idle one holds.
    virtual void on_tick(std::uint32_t now) = 0;
    /// Loop is draining: close now if idle, else after the answer in progress.
    virtual void on_drain() = 0;
    /// The server stops soon: a handler still owing this connection an answer is told.
    virtual void warn_draining() = 0;
    /// Closes the transport; an answer still owed is dropped (its handler told the client went away).
    virtual void close() = 0;

    std::shared_ptr<TransportUser> share() final;

    /// Speaks TLS with the certificates of `contexts` (the HTTPS port): before start(). False
    /// (logged) if it cannot: close() it.
    bool begin_tls(std::shared_ptr<const TlsContexts> contexts, LoopSlot* counters) {
        return transport_.start_tls(std::move(contexts), counters);
    }

    /// --client-connections: this connection counts as one unit of its client's open work, or
    /// its client holds as many as it may already, and it is refused once it says what it speaks
    /// (HTTP/1: 503 and close, 429 to a WebSocket; HTTP/2: GOAWAY with REFUSED_STREAM). Before start().
    void charge_client();

    Connection* prev = nullptr;  // ConnectionList's links
    Connection* next = nullptr;

protected:
    /// The peer's address as bytes (for the per-client limits: the text is what most need).
    IpAddress peer() const { return client().ip(); }
    ClientInfo client() const {
        return ClientInfo{address_, port_, lane_, transport_.is_tls(), over_client_cap_, peer_v4_};
    }

    LoopContext& loop_;
    Transport transport_;
    char address_[IpAddress::kMaxText] = {};  // the peer's, as text
    unsigned short port_ = 0;
    Lane lane_;
    bool holds_client_unit_ = false;  // released when the connection goes (it follows a take-over)
    bool over_client_cap_ = false;
    std::uint32_t peer_v4_ = 0;  // the peer as IPv4, host order (0: IPv6): a limit reads it per request
};

template <class Visit>
void ConnectionList::for_each(Visit&& visit) {
    for (Connection* c = head_; c;) {
        Connection* next = c->next;  // `visit` may unlink c
        visit(*c);
        c = next;
    }
}

}  // namespace cspd
