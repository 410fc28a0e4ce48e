// One listening socket of an event loop (the main port, or --status-listen): waits for
// it to be readable, takes what is queued in bounded batches, and hands each accepted
// socket on. Out of descriptors or memory, it pauses 100 ms instead of spinning, and
// says so at most once a second. Loop thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace cspd {

class Acceptor {
public:
    /// Receives each accepted socket: non-blocking, close-on-exec, now the receiver's to close.
    using OnAccepted = std::function<void(int fd, const boost::asio::ip::tcp::endpoint& peer)>;

    /// `name` says which listener in log lines.
    Acceptor(boost::asio::io_context& io, std::string name, OnAccepted on_accepted);

    /// Takes over a listening socket opened by open_listener, here or in the master.
    void adopt(int fd);
    bool is_open() const { return acceptor_.is_open(); }

    /// Starts accepting.
    void start();
    /// Takes what is queued now, without waiting, up to `limit` connections: before a drain
    /// closes the socket, which would reset them.
    void take_backlog(unsigned limit = 4096);
    /// Stops accepting and closes the socket.
    void close();

private:
    enum class Taken { connection, none, error };
    Taken accept_one();
    void wait();
    void on_readable();
    void pause_after_error(int err);

    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    std::string name_;
    OnAccepted on_accepted_;
    std::int64_t last_error_log_s_ = -1;
    bool closed_ = false;
};

}  // namespace cspd
