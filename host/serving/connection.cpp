#include "serving/connection.hpp"

#include "serving/loop_context.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <iterator>

namespace cspd {

Connection::Connection(LoopContext& loop, int fd, const boost::asio::ip::tcp::endpoint& peer, Lane lane) noexcept
    : loop_(loop), transport_(loop.reads, fd, peer.address().is_v6()), lane_(lane) {
    // Nothing here throws: the transport owns `fd` from the start.
    const sockaddr* where = peer.data();
    const void* bytes = where->sa_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(where)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(where)->sin_addr);
    if (!::inet_ntop(where->sa_family, bytes, address_, sizeof address_)) address_[0] = '\0';
    port_ = peer.port();
    loop_.connections.attach(this);
    ++loop_.open_in_lane[std::size_t(lane_)];
}

Connection::Connection(TakeOver, Connection& from) noexcept
    : enable_shared_from_this(), loop_(from.loop_), transport_(std::move(from.transport_)), port_(from.port_), lane_(from.lane_) {
    std::copy(std::begin(from.address_), std::end(from.address_), address_);
    loop_.connections.attach(this, false);
    ++loop_.open_in_lane[std::size_t(lane_)];
}

Connection::~Connection() {
    --loop_.open_in_lane[std::size_t(lane_)];
    loop_.connections.detach(this);
}

std::shared_ptr<TransportUser> Connection::share() {
    return std::shared_ptr<TransportUser>(shared_from_this(), this);  // aliasing: the connection owns
}

}  // namespace cspd
