#include "connection.hpp"

#include "event_loop.hpp"
#include "http_response.hpp"

#include <spdlog/spdlog.h>

#include <sys/sendfile.h>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// Stop reading new requests once this much output waits: a client that pipelines
// without reading cannot make us buffer without bound.
constexpr std::size_t kOutputHighWater = 256 * 1024;
// Output buffers above this are released after being written, so idle connections stay small.
constexpr std::size_t kKeepOutputCapacity = 64 * 1024;
// A client that stops reading our response is dropped after this.
constexpr std::uint32_t kWriteTimeoutS = 30;
// After a final response, unread input is drained this long before closing, so the
// kernel does not answer it with a reset that could destroy the response in flight.
constexpr std::uint32_t kLingerS = 2;
} // namespace

Connection::Connection(EventLoop& loop, tcp::socket socket)
    : loop_(loop), socket_(std::move(socket)),
      parser_(ParseLimits{loop.config().max_head_bytes, loop.config().max_body_bytes}) {
    loop_.attach(this);
}

Connection::~Connection() { loop_.detach(this); }

void Connection::start() {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    socket_.set_option(tcp::no_delay(true), ec);
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) {
        std::string text = remote.address().to_string();
        text.copy(address_, sizeof address_ - 1);
        port_ = remote.port();
    }
    last_activity_ = loop_.now();
    wait_readable();
}

void Connection::wait_readable() {
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->on_readable();
    });
}

void Connection::wait_writable() {
    state_ = State::writing;
    socket_.async_wait(tcp::socket::wait_write, [self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->flush();
    });
}

void Connection::on_readable() {
    auto& buffer = loop_.read_buffer();
    for (;;) {
        boost::system::error_code ec;
        std::size_t n = socket_.read_some(asio::buffer(buffer), ec);
        if (ec == asio::error::would_block) break;
        if (ec) {
            // EOF or reset: nothing is owed to a client that has gone (we never read while output is pending).
            close();
            return;
        }
        last_activity_ = loop_.now();
        const bool was_mid_request = parser_.mid_request();
        HttpParser::Status status = parser_.feed({buffer.data(), n}, *this);
        if (status != HttpParser::Status::ok && status != HttpParser::Status::stopped) {
            on_parse_failure(status);
            break;
        }
        if (parser_.mid_request() && !was_mid_request) request_started_ = loop_.now();
        if (closing_ || pending_output() >= kOutputHighWater || n < buffer.size()) break;
    }
    flush();
}

bool Connection::on_request(const HttpRequest& request) {
    request_started_ = loop_.now();
    const bool keep_alive = request.keep_alive && !loop_.draining();
    StaticFiles::File body_file;
    loop_.router().respond(request, ClientInfo{address_, port_}, keep_alive, out_, body_file);
    if (body_file.fd >= 0) {
        // The head in out_ goes first, then the file; later responses queue behind them.
        queued_bytes_ += out_.size() + body_file.size;
        queued_.push_back({std::move(out_), {}, 0});
        queued_.push_back({{}, std::move(body_file), 0});
        out_.clear();
    }
    if (!keep_alive) closing_ = true;
    return keep_alive;
}

void Connection::on_continue_expected() { out_.append("HTTP/1.1 100 Continue\r\n\r\n"); }

bool Connection::write_queued(bool& would_block) {
    would_block = false;
    while (!queued_.empty()) {
        QueuedOutput& q = queued_.front();
        const std::size_t total = q.file.fd >= 0 ? q.file.size : q.bytes.size();
        while (q.sent < total) {
            ssize_t n;
            if (q.file.fd >= 0) {
                off_t offset = static_cast<off_t>(q.sent);
                n = ::sendfile(socket_.native_handle(), q.file.fd, &offset, total - q.sent);
                if (n == 0) {  // the file shrank under us: the promised length cannot be kept
                    spdlog::warn("client {}:{}: static file shrank while being sent; closing", address_, port_);
                    close();
                    return false;
                }
            } else {
                n = ::send(socket_.native_handle(), q.bytes.data() + q.sent, total - q.sent, MSG_NOSIGNAL);
            }
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    would_block = true;
                    return true;
                }
                close();
                return false;
            }
            q.sent += static_cast<std::size_t>(n);
            queued_bytes_ -= static_cast<std::size_t>(n);
            last_activity_ = loop_.now();
        }
        queued_.pop_front();
    }
    return true;
}

void Connection::on_parse_failure(HttpParser::Status status) {
    int code = 400;
    switch (status) {
    case HttpParser::Status::head_too_large: code = 431; break;
    case HttpParser::Status::body_too_large: code = 413; break;
    case HttpParser::Status::upgrade:
        // The request before the upgrade was answered; we speak no other protocol.
        closing_ = true;
        return;
    default:
        spdlog::debug("client {}:{}: bad request: {}", address_, port_, parser_.error_reason());
        break;
    }
    append_error(out_, code, loop_.date().now(), false, false);
    closing_ = true;
}

void Connection::flush() {
    bool would_block = false;
    if (!queued_.empty() && (!write_queued(would_block) || would_block)) {
        if (would_block) wait_writable();
        return;
    }
    while (out_sent_ < out_.size()) {
        boost::system::error_code ec;
        std::size_t n = socket_.write_some(asio::buffer(out_.data() + out_sent_, out_.size() - out_sent_), ec);
        if (ec == asio::error::would_block) {
            wait_writable();
            return;
        }
        if (ec) {
            close();
            return;
        }
        out_sent_ += n;
        last_activity_ = loop_.now();
    }
    out_.clear();
    out_sent_ = 0;
    if (out_.capacity() > kKeepOutputCapacity) std::string().swap(out_);
    state_ = State::reading;
    if (closing_ || (loop_.draining() && !parser_.mid_request())) {
        linger();
        return;
    }
    wait_readable();
}

void Connection::linger() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec) {
        close();
        return;
    }
    state_ = State::lingering;
    last_activity_ = loop_.now();
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code wait_ec) {
        if (!wait_ec) self->on_linger_readable();
    });
}

void Connection::on_linger_readable() {
    auto& buffer = loop_.read_buffer();
    for (;;) {
        boost::system::error_code ec;
        socket_.read_some(asio::buffer(buffer), ec);
        if (ec == asio::error::would_block) break;
        if (ec) {  // EOF: the client has seen our close
            close();
            return;
        }
    }
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->on_linger_readable();
    });
}

void Connection::on_drain() {
    if (idle()) close();
}

void Connection::on_tick(std::uint32_t now) {
    const Config& config = loop_.config();
    switch (state_) {
    case State::reading:
        if (parser_.mid_request()) {
            if (now - request_started_ >= config.header_timeout_s) close();
        } else if (now - last_activity_ >= config.keepalive_timeout_s) {
            close();
        }
        break;
    case State::writing:
        if (now - last_activity_ >= kWriteTimeoutS) close();
        break;
    case State::lingering:
        if (now - last_activity_ >= kLingerS) close();
        break;
    case State::closed:
        break;
    }
}

void Connection::close() {
    if (state_ == State::closed) return;
    state_ = State::closed;
    boost::system::error_code ec;
    socket_.close(ec);
}

} // namespace cspd
