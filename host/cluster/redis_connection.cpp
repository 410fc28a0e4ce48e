#include "cluster/redis_connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <deque>
#include <vector>

namespace cspd {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct RedisConnection::Impl : std::enable_shared_from_this<Impl> {
    Impl(asio::io_context& io, RedisConnection::Events told, resp::Limits limits)
        : resolver(io), socket(io), timer(io), events(std::move(told)), reader(limits) {}

    asio::ip::tcp::resolver resolver;
    asio::generic::stream_protocol::socket socket;
    asio::steady_timer timer;  // the connect's deadline, then the watch on owed answers
    RedisConnection::Events events;
    resp::Reader reader;
    std::deque<RedisConnection::Reply> replies;  // one per command owed, in order (not with push)
    std::size_t owed = 0;
    std::string out, writing;
    bool is_writing = false;
    bool is_connected = false;
    bool closed = false;
    Clock::time_point waiting_since{};  // when an answer began to be owed with nothing read since
    char input[64 * 1024];

    void start(const RedisAddress& address) {
        timer.expires_after(kConnectTimeout);
        timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec && !self->is_connected) self->fail("no connection within 3 s");
        });
        if (address.is_unix()) {
            connect({asio::generic::stream_protocol::endpoint(asio::local::stream_protocol::endpoint(address.unix_path))});
            return;
        }
        resolver.async_resolve(address.host, std::to_string(address.port),
                               [self = shared_from_this()](boost::system::error_code ec,
                                                           asio::ip::tcp::resolver::results_type found) {
                                   if (self->closed) return;
                                   if (ec) return self->fail("cannot resolve its name: " + ec.message());
                                   std::vector<asio::generic::stream_protocol::endpoint> endpoints;
                                   for (const auto& entry : found) endpoints.emplace_back(entry.endpoint());
                                   self->connect(std::move(endpoints));
                               });
    }

    void connect(std::vector<asio::generic::stream_protocol::endpoint> endpoints) {
        auto shared = std::make_shared<std::vector<asio::generic::stream_protocol::endpoint>>(std::move(endpoints));
        asio::async_connect(socket, *shared,
                            [self = shared_from_this(), shared](boost::system::error_code ec, const auto&) {
                                if (self->closed) return;
                                if (ec) return self->fail("cannot connect: " + ec.message());
                                self->is_connected = true;
                                self->timer.cancel();
                                self->watch();
                                self->read();
                                self->flush();
                                if (self->events.connected) self->events.connected();
                            });
    }

    void send(std::span<const std::string_view> args, RedisConnection::Reply reply) {
        if (closed) return;
        resp::append_command(out, args);
        if (!events.push) replies.push_back(std::move(reply));
        if (owed++ == 0) waiting_since = Clock::now();
        flush();
    }

    void flush() {
        if (!is_connected || is_writing || out.empty() || closed) return;
        is_writing = true;
        writing.swap(out);
        asio::async_write(socket, asio::buffer(writing), [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
            self->is_writing = false;
            if (self->closed) return;
            if (ec) return self->fail("write failed: " + ec.message());
            self->writing.clear();
            self->flush();
        });
    }

    void read() {
        socket.async_read_some(asio::buffer(input), [self = shared_from_this()](boost::system::error_code ec, std::size_t got) {
            if (self->closed) return;
            if (ec) return self->fail(ec == asio::error::eof ? "Redis closed the connection" : "read failed: " + ec.message());
            self->reader.feed(std::string_view(self->input, got));
            if (!self->take_values()) return;
            self->read();
        });
    }

    /// False when the connection closed meanwhile (malformed input, or a callback closed it).
    bool take_values() {
        waiting_since = Clock::now();  // bytes came: whatever is owed is on its way
        for (;;) {
            resp::Value value;
            const resp::Reader::Result result = reader.next(value);
            if (result == resp::Reader::Result::need_more) return true;
            if (result == resp::Reader::Result::malformed) {
                fail("Redis sent what is not RESP: " + std::string(reader.why()));
                return false;
            }
            if (owed > 0) --owed;
            const std::shared_ptr<Impl> keep = shared_from_this();
            if (events.push) {
                events.push(value);
            } else if (!replies.empty()) {
                RedisConnection::Reply reply = std::move(replies.front());
                replies.pop_front();
                if (reply) reply(value);
            } else {
                fail("Redis answered a command that was not sent");
                return false;
            }
            if (closed) return false;
        }
    }

    void watch() {
        timer.expires_after(std::chrono::milliseconds(500));
        timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (ec || self->closed) return;
            // A subscription connection owes nothing but what its own commands asked (pings).
            if (self->owed > 0 && Clock::now() - self->waiting_since > kReplyTimeout)
                return self->fail("no answer for 3 s");
            self->watch();
        });
    }

    void fail(const std::string& why) {
        if (closed) return;
        shut();
        if (events.closed) {
            const auto said = std::move(events.closed);
            said(why);
        }
    }

    void shut() {
        closed = true;
        boost::system::error_code ignored;
        resolver.cancel();
        timer.cancel();
        socket.shutdown(asio::socket_base::shutdown_both, ignored);
        socket.close(ignored);
        replies.clear();  // (the callbacks stay: one of them may be running; `closed` keeps them from being called)
    }
};

std::unique_ptr<RedisConnection> RedisConnection::open(asio::io_context& io, const RedisAddress& address, Events events,
                                                      resp::Limits limits) {
    auto impl = std::make_shared<Impl>(io, std::move(events), limits);
    impl->start(address);
    return std::unique_ptr<RedisConnection>(new RedisConnection(std::move(impl)));
}

RedisConnection::~RedisConnection() {
    if (impl_->closed) return;
    impl_->events.closed = nullptr;  // going away says nothing
    impl_->shut();
}

void RedisConnection::send(std::span<const std::string_view> args, Reply reply) { impl_->send(args, std::move(reply)); }

void RedisConnection::close(const std::string& why) { impl_->fail(why); }

bool RedisConnection::connected() const { return impl_->is_connected && !impl_->closed; }

std::size_t RedisConnection::queued_bytes() const { return impl_->out.size() + impl_->writing.size(); }

std::size_t RedisConnection::owed() const { return impl_->owed; }

}  // namespace cspd
