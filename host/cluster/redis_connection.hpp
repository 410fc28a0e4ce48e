// One connection to Redis on an Asio loop: commands go out as RESP (pipelined, never waited for),
// replies come back to each command's callback in order, or, on a subscription connection, every
// value goes to one callback (pub/sub messages and confirmations). Nothing blocks the loop: the
// name is resolved, the connection made and every byte moved asynchronously.
//
// Lifetime: the caller owns the RedisConnection; its socket's state is shared with the operations
// in flight, which end (aborted, no callback) when it goes. close() (or a failure) says closed once,
// and from then on no callback runs and sends are dropped. A connection that owes an answer
// and hears nothing for the reply timeout is closed: a Redis that stopped (or a cut that sends no
// reset) is found.
#pragma once

#include "cluster/redis_address.hpp"
#include "cluster/resp.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace cspd {

class RedisConnection {
public:
    using Reply = std::function<void(resp::Value& reply)>;
    struct Events {
        std::function<void()> connected;
        std::function<void(const std::string& why)> closed;
        /// Set: a subscription connection, every value read goes here.
        std::function<void(resp::Value& value)> push;
    };
    /// How long a connect may take, and how long Redis may stay silent while it owes an answer.
    static constexpr std::chrono::milliseconds kConnectTimeout{3000};
    static constexpr std::chrono::milliseconds kReplyTimeout{3000};

    /// `limits`: what one reply may hold (past them the connection is closed as broken).
    static std::unique_ptr<RedisConnection> open(boost::asio::io_context& io, const RedisAddress& address,
                                                 Events events, resp::Limits limits = {});
    ~RedisConnection();

    /// Queues one command; `reply` gets its answer (an error reply is a Value of type error).
    /// Dropped once closed. With Events::push, replies go there instead.
    void send(std::span<const std::string_view> args, Reply reply = {});
    void send(std::initializer_list<std::string_view> args, Reply reply = {}) {
        send(std::span<const std::string_view>(args.begin(), args.size()), std::move(reply));
    }
    /// Says closed(why) once, unless it was closed already. (Going away closes without a word.)
    void close(const std::string& why);
    bool connected() const;
    /// Bytes queued to send, and answers owed.
    std::size_t queued_bytes() const;
    std::size_t owed() const;

    struct Impl;

private:
    explicit RedisConnection(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<Impl> impl_;
};

}  // namespace cspd
