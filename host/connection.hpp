// One client connection: read -> parse -> route -> write, keep-alive and
// pipelining (responses leave in request order, a whole read's worth in one
// write), timeouts via the loop's tick.
//
// Lifetime: shared_ptr. Every pending async wait holds `self`; the object dies
// when none does. The loop's intrusive list only points at it.
#pragma once

#include "http_parser.hpp"
#include "static_files.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace cspd {

class EventLoop;

class Connection final : public std::enable_shared_from_this<Connection>, private RequestSink {
public:
    Connection(EventLoop& loop, boost::asio::ip::tcp::socket socket);
    ~Connection();

    void start();
    /// Loop is draining: close now if idle, else after the response in progress.
    void on_drain();
    /// Once a second: enforce timeouts.
    void on_tick(std::uint32_t now);
    /// Closes the socket; pending waits complete with operation_aborted.
    void close();

    Connection* prev = nullptr;  // EventLoop's intrusive list
    Connection* next = nullptr;

private:
    enum class State : std::uint8_t { reading, writing, lingering, closed };

    /// Output that must leave before out_: a large file body, and the bytes queued ahead of it.
    struct QueuedOutput {
        std::string bytes;
        StaticFiles::File file;
        std::size_t sent = 0;
    };

    bool on_request(const HttpRequest& request) override;
    void on_continue_expected() override;
    /// Writes what it can without blocking; false if the connection failed and was closed.
    bool write_queued(bool& would_block);
    std::size_t pending_output() const { return queued_bytes_ + out_.size(); }
    void wait_readable();
    void wait_writable();
    void on_readable();
    void on_parse_failure(HttpParser::Status status);
    void flush();
    void linger();
    void on_linger_readable();
    bool idle() const { return state_ == State::reading && pending_output() == 0 && !parser_.mid_request(); }

    EventLoop& loop_;
    boost::asio::ip::tcp::socket socket_;
    HttpParser parser_;
    std::deque<QueuedOutput> queued_;  // rare: only with streamed files
    std::size_t queued_bytes_ = 0;
    std::string out_;           // responses not yet written
    std::size_t out_sent_ = 0;  // bytes of out_ already written
    State state_ = State::reading;
    bool closing_ = false;      // close once out_ is written
    std::uint32_t last_activity_ = 0;
    std::uint32_t request_started_ = 0;
    char address_[46] = {};     // INET6_ADDRSTRLEN
    unsigned short port_ = 0;
};

} // namespace cspd
