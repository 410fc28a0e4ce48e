// A worker's side of HTTPS certificates: twice a second (on the control thread) it asks the key
// process whether what serves changed and, when it did, builds new TLS contexts from the
// certificates it lists -- their chains, and proxy keys that sign through the key process --
// and hands them to every loop. New handshakes use a new or changed certificate within a
// second; open connections keep theirs. The worker never reads the certificates folder.
#pragma once

#include "routing/tls_status.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cspd {

class EventLoop;

class CertificateWatch {
public:
    /// What it learns of the folder goes on `board`, for /-/status; `http2`: ALPN offers h2.
    CertificateWatch(boost::asio::io_context& control, const std::vector<std::unique_ptr<EventLoop>>& loops,
                     TlsStatusBoard& board, bool http2);

    /// Asks once and gives the loops their first contexts (before they run), then keeps asking.
    void start();
    void stop();


private:
    void ask();
    void look_again();
    bool rebuild(const std::string& listing);

    const std::vector<std::unique_ptr<EventLoop>>& loops_;
    boost::asio::steady_timer timer_;
    std::uint64_t generation_ = 0;
    TlsStatusBoard& board_;
    bool unreachable_logged_ = false;
    bool served_nothing_logged_ = false;
    bool http2_;
};

}  // namespace cspd
