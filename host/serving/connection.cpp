#include "serving/connection.hpp"

#include "serving/loop_context.hpp"

#include "http/forwarded_for.hpp"
#include "limits/client_limits.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace cspd {

Connection::Connection(LoopContext& loop, int fd, const boost::asio::ip::tcp::endpoint& peer, Lane lane,
                       bool socket_v6) noexcept
    : loop_(loop), transport_(loop.reads, fd, socket_v6 || peer.address().is_v6()), lane_(lane) {
    // Nothing here throws: the transport owns `fd` from the start.
    const IpAddress address = IpAddress::from_sockaddr(peer.data());
    address.format(address_);
    peer_v4_ = address.v4_value();
    port_ = peer.port();
    loop_.connections.attach(this);
    ++loop_.open_in_lane[std::size_t(lane_)];
}

Connection::Connection(TakeOver, Connection& from) noexcept
    : enable_shared_from_this(), loop_(from.loop_), transport_(std::move(from.transport_)),
      port_(from.port_), lane_(from.lane_), holds_client_unit_(std::exchange(from.holds_client_unit_, false)),
      over_client_cap_(from.over_client_cap_), peer_v4_(from.peer_v4_) {
    std::copy(std::begin(from.address_), std::end(from.address_), address_);
    loop_.connections.attach(this, false);
    ++loop_.open_in_lane[std::size_t(lane_)];
}

Connection::~Connection() {
    if (holds_client_unit_) loop_.client_limits->release(peer());
    --loop_.open_in_lane[std::size_t(lane_)];
    loop_.connections.detach(this);
}

void Connection::charge_client() {
    ClientLimits* limits = loop_.client_limits;
    // A proxy we trust carries many clients: it is not one of them (its requests' clients are
    // counted by rate, which sees who it names).
    if (!limits || !limits->caps_work() || lane_ == Lane::status_port ||
        (loop_.trusted_proxies && loop_.trusted_proxies->trusts(peer())))
        return;
    over_client_cap_ = !limits->hold(peer(), holds_client_unit_);
}

std::shared_ptr<TransportUser> Connection::share() {
    return std::shared_ptr<TransportUser>(shared_from_this(), this);  // aliasing: the connection owns
}

}  // namespace cspd
