// A new connection's PROXY protocol header (--proxy-protocol), before anything else is read from
// it (TLS included): the socket's first bytes are peeked at until the header is whole, then exactly
// it is taken, and the connection goes on as if accepted from the client the header names.
// Level-triggered readiness would fire again at once for a header still short, so a short one is
// looked at again 10 ms later instead; --header-timeout bounds the whole wait. Loop thread only.
//
// Lifetime: shared_ptr, held by the ReadWatch while it waits to read and by its timer's wait;
// it owns the socket until it hands it on, and closes it if it never does.
#pragma once

#include "common/unique_fd.hpp"
#include "serving/read_watch.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace cspd {

class ProxyHeaderWait final : public ReadWatch::Reader, public std::enable_shared_from_this<ProxyHeaderWait> {
public:
    /// Receives the socket, the client the header named (the peer itself after LOCAL or UNKNOWN)
    /// and the peer.
    using OnHeader = std::function<void(int fd, const boost::asio::ip::tcp::endpoint& client,
                                        const boost::asio::ip::tcp::endpoint& peer)>;
    /// Says why a connection was closed without one (for a rate-limited log line).
    using OnRefused = std::function<void(const boost::asio::ip::tcp::endpoint& peer, const char* why)>;

    /// Takes `fd`, accepted from `peer`; begin() starts the wait.
    ProxyHeaderWait(ReadWatch& reads, int fd, const boost::asio::ip::tcp::endpoint& peer, std::chrono::seconds timeout,
                    OnHeader on_header, OnRefused on_refused, std::size_t& waiting);
    ~ProxyHeaderWait();

    void begin();
    void on_readable() override;

private:
    enum class Step { done, again_later, wait_readable };
    Step try_read();
    void finish(const char* refused_why);
    void retry_after(std::chrono::milliseconds delay);

    ReadWatch& reads_;
    UniqueFd fd_;
    boost::asio::ip::tcp::endpoint peer_;
    boost::asio::ip::tcp::endpoint client_;
    boost::asio::steady_timer retry_;
    std::chrono::steady_clock::time_point deadline_;
    OnHeader on_header_;
    OnRefused on_refused_;
    std::size_t& waiting_;  // the loop's count of connections at this stage (--max-connections holds them too)
    bool watched_ = false;
    bool finished_ = false;
};

}  // namespace cspd
