// One client connection: read -> parse -> route -> write, keep-alive and
// pipelining (responses leave in request order, a whole read's worth in one
// write), timeouts via the loop's tick.
//
// Reads: a busy connection keeps an async read pending into a buffer lent by
// its loop; one idle for a tick gives the buffer back and waits for readability
// alone, so idle connections hold no buffer.
//
// Lifetime: shared_ptr. Every pending async operation holds `self`; the object
// dies when none does. The loop's intrusive list only points at it.
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
    Connection(EventLoop& loop, boost::asio::ip::tcp::socket socket, const boost::asio::ip::tcp::endpoint& peer);
    ~Connection();

    void start();
    /// Loop is draining: close now if idle, else after the response in progress.
    void on_drain();
    /// Once a second: enforce timeouts, park idle connections.
    void on_tick(std::uint32_t now);
    /// Closes the socket; pending operations complete with operation_aborted.
    void close();

    Connection* prev = nullptr;  // EventLoop's intrusive list
    Connection* next = nullptr;

private:
    enum class State : std::uint8_t {
        reading,    ///< async read pending into buffer_
        parked,     ///< idle: waiting for readability, no buffer
        writing,    ///< output waits for the socket to drain
        lingering,  ///< final response sent, reading and discarding until EOF
        closed,
    };

    /// Output that must leave before out_: a large file body, and the bytes queued ahead of it.
    struct QueuedOutput {
        std::string bytes;
        StaticFiles::File file;
        std::size_t sent = 0;
    };

    SinkAction on_request(const HttpRequest& request) override;
    void on_continue_expected() override;

    void read();
    void on_read(const boost::system::error_code& ec, std::size_t n);
    void park();
    void on_wake();
    void process(std::string_view input);
    void on_parse_failure(HttpParser::Status status);
    void flush();
    /// Writes what it can without blocking; false if the connection failed and was closed.
    bool write_queued(bool& would_block);
    void wait_writable();
    /// All output written: go on reading, or close.
    void resume();
    void linger();
    void on_linger_readable();
    void release_buffer();
    std::size_t pending_output() const { return queued_bytes_ + out_.size(); }
    bool idle() const {
        return (state_ == State::reading || state_ == State::parked) && pending_output() == 0 &&
               !parser_.mid_request() && pending_input_.empty();
    }

    EventLoop& loop_;
    boost::asio::ip::tcp::socket socket_;
    HttpParser parser_;
    char* buffer_ = nullptr;        // lent by the loop while reading
    std::string pending_input_;     // bytes read but not parsed yet (after a pause)
    std::deque<QueuedOutput> queued_;  // rare: only with streamed files
    std::size_t queued_bytes_ = 0;
    std::string out_;               // responses not yet written
    std::size_t out_sent_ = 0;      // bytes of out_ already written
    State state_ = State::reading;
    bool closing_ = false;          // close once output is written
    bool park_requested_ = false;   // the pending read was cancelled to park
    bool linger_on_close_ = false;  // unread input may follow: drain before closing
    // Loop-tick timestamps (seconds) for the timeouts in on_tick.
    std::uint32_t last_request_ = 0;     // last complete request (keep-alive idle timeout)
    std::uint32_t last_read_ = 0;        // last bytes in (parking, stalled bodies)
    std::uint32_t last_write_ = 0;       // last bytes out, or when lingering began
    std::uint32_t request_started_ = 0;  // first bytes of the current request (header timeout)
    char address_[46] = {};         // INET6_ADDRSTRLEN
    unsigned short port_ = 0;
};

} // namespace cspd
