#include "cluster/cluster_link.hpp"

#include "cluster/redis_connection.hpp"
#include "cluster/topic_positions.hpp"
#include "cluster/topic_wire.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <sys/random.h>

#include <charconv>
#include <chrono>
#include <deque>
#include <set>
#include <string>
#include <vector>

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// Publishes sent and not yet answered, at most: enough to fill a round trip at 10,000 a second.
constexpr std::size_t kInFlight = 1024;
/// Entries one recovery reads at once.
constexpr std::size_t kRecoverPage = 500;
/// Channels one SUBSCRIBE names at once.
constexpr std::size_t kSubscribeBatch = 500;
constexpr Clock::duration kFirstBackoff = 100ms, kMaxBackoff = 5s;

std::string random_origin() {
    unsigned char bytes[8];
    if (::getrandom(bytes, sizeof bytes, 0) != sizeof bytes) {
        const auto now = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
        for (std::size_t i = 0; i < sizeof bytes; ++i) bytes[i] = static_cast<unsigned char>(now >> (8 * i));
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    for (const unsigned char b : bytes) text += {digits[b >> 4], digits[b & 15]};
    return text;
}

std::uint64_t number_of(const resp::Value& value) {
    std::uint64_t n = 0;
    if (value.type == resp::Type::integer) return value.integer > 0 ? std::uint64_t(value.integer) : 0;
    if (value.type != resp::Type::bulk) return 0;
    std::from_chars(value.text.data(), value.text.data() + value.text.size(), n);
    return n;
}

}  // namespace

struct ClusterLink::Impl final : TopicPositions::Actions, std::enable_shared_from_this<Impl> {
    Impl(asio::io_context& context, ClusterOptions opts, Deliver on_deliver, Gap on_gap, Settled on_settled)
        : io(context), options(std::move(opts)), deliver_fn(std::move(on_deliver)), gap_fn(std::move(on_gap)),
          settled_fn(std::move(on_settled)),
          origin(random_origin()), positions(origin), retry(context), ping(context) {}

    struct Pending {
        std::string topic, data;
        bool binary;
        std::uint64_t sequence;
        Clock::time_point at;
        std::uint64_t cookie;
        unsigned skips = 0;  // not a message: the topic's offset moves on by this many
    };

    asio::io_context& io;
    ClusterOptions options;
    Deliver deliver_fn;
    Gap gap_fn;
    Settled settled_fn;
    std::string origin;  // this host, in what it publishes
    TopicPositions positions;
    asio::steady_timer retry, ping;
    std::unique_ptr<RedisConnection> commands, subscriptions;
    bool commands_up = false;  // connected, scripts loaded
    bool subscriptions_up = false;
    bool ever_up = false;
    bool said_down = false;
    std::uint64_t generation = 0;  // one per connection attempt: late callbacks of an older one are ignored
    Clock::duration backoff = kFirstBackoff;
    std::string publish_sha, recover_sha, skip_sha;
    std::deque<Pending> queue;  // in publish order; the first `sent` are sent and await their answer
    std::size_t sent = 0;
    std::size_t queued_bytes = 0;
    std::uint64_t next_sequence = 1;
    std::set<std::string> wanted;
    ClusterReport counts;
    Clock::time_point last_error_log{};
    bool refusing = false;  // Redis refuses publishes for now (loading, read-only, out of memory): back off

    resp::Limits reply_limits() const {
        resp::Limits limits;
        // A recovery's page of messages as large as a message may be, with room for their fields.
        limits.max_bulk = std::max(limits.max_bulk, options.max_message + 4096);
        return limits;
    }

    // --- connecting ------------------------------------------------------------------

    void connect() {
        const std::uint64_t attempt = ++generation;
        std::weak_ptr<Impl> weak = weak_from_this();
        commands = RedisConnection::open(
            io, options.address,
            {[weak, attempt] {
                 if (auto self = weak.lock(); self && self->generation == attempt) self->load_scripts(attempt);
             },
             [weak, attempt](const std::string& why) {
                 if (auto self = weak.lock(); self && self->generation == attempt) self->lost(why);
             },
             {}},
            reply_limits());
    }

    void load_scripts(std::uint64_t attempt) {
        std::weak_ptr<Impl> weak = weak_from_this();
        const auto loaded = [weak, attempt](std::string Impl::*sha) {
            return [weak, attempt, sha](resp::Value& reply) {
                auto self = weak.lock();
                if (!self || self->generation != attempt) return;
                if (reply.type != resp::Type::bulk) {
                    self->lost("cannot load its scripts: " + reply.text);
                    return;
                }
                (*self).*sha = reply.text;
                if (!self->publish_sha.empty() && !self->recover_sha.empty() && !self->skip_sha.empty())
                    self->commands_ready(attempt);
            };
        };
        publish_sha.clear();
        recover_sha.clear();
        skip_sha.clear();
        commands->send({"SCRIPT", "LOAD", topic_wire::kPublishScript}, loaded(&Impl::publish_sha));
        commands->send({"SCRIPT", "LOAD", topic_wire::kRecoverScript}, loaded(&Impl::recover_sha));
        commands->send({"SCRIPT", "LOAD", topic_wire::kSkipScript}, loaded(&Impl::skip_sha));
    }

    void commands_ready(std::uint64_t attempt) {
        commands_up = true;
        std::weak_ptr<Impl> weak = weak_from_this();
        subscriptions = RedisConnection::open(
            io, options.address,
            {[weak, attempt] {
                 if (auto self = weak.lock(); self && self->generation == attempt) self->subscriptions_ready();
             },
             [weak, attempt](const std::string& why) {
                 if (auto self = weak.lock(); self && self->generation == attempt) self->lost(why);
             },
             [weak, attempt](resp::Value& value) {
                 if (auto self = weak.lock(); self && self->generation == attempt) self->pushed(value);
             }},
            reply_limits());
        send_queued();
    }

    void subscriptions_ready() {
        subscriptions_up = true;
        if (!refusing) backoff = kFirstBackoff;  // (a Redis that refuses publishes keeps the back-off growing)
        if (ever_up) ++counts.reconnects;
        spdlog::info("cluster: {} to {} ({} topic(s) subscribed, {} publish(es) waiting)",
                     ever_up ? "connected again" : "connected", options.address.text(), wanted.size(), queue.size());
        ever_up = true;
        said_down = false;
        std::vector<std::string> names;
        for (const std::string& topic : wanted) {
            names.push_back(topic_wire::channel(topic));
            if (names.size() == kSubscribeBatch) subscribe(names);
        }
        if (!names.empty()) subscribe(names);
    }

    void subscribe(std::vector<std::string>& channels) {
        std::vector<std::string_view> args{"SUBSCRIBE"};
        for (const std::string& c : channels) args.push_back(c);
        subscriptions->send(args);
        channels.clear();
    }

    void lost(const std::string& why) {
        if (!commands && !subscriptions) return;
        if (!said_down)
            spdlog::warn("cluster: the link to {} is down: {}; topics reach this host's subscribers only, publishes "
                         "wait (up to {} bytes), and reconnecting goes on",
                         options.address.text(), why, options.queue_bytes);
        said_down = true;
        ++generation;  // whatever the old connections still say is not heard
        commands.reset();
        subscriptions.reset();
        commands_up = subscriptions_up = false;
        sent = 0;  // sent again once back: a publish Redis recorded already is not recorded twice
        positions.link_lost();
        retry.expires_after(backoff);
        backoff = std::min(backoff * 2, kMaxBackoff);
        retry.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
            if (auto self = weak.lock(); self && !ec) self->connect();
        });
    }

    void keep_pinging() {
        ping.expires_after(1s);
        ping.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
            auto self = weak.lock();
            if (!self || ec) return;
            // A Redis that stops answering (stopped, or cut without a reset) is found by what it owes.
            if (self->commands_up) self->commands->send({"PING"});
            if (self->subscriptions_up) self->subscriptions->send({"PING"});
            self->keep_pinging();
        });
    }

    // --- publishing ------------------------------------------------------------------

    void send_queued() {
        if (!commands_up) return;
        while (sent < queue.size() && sent < kInFlight) {
            const Pending& p = queue[sent++];
            auto answered = [weak = weak_from_this(), attempt = generation](resp::Value& reply) {
                if (auto self = weak.lock(); self && self->generation == attempt) self->published(reply);
            };
            if (p.skips) {
                const std::string epoch = origin + ".s" + std::to_string(next_sequence);
                commands->send({"EVALSHA", skip_sha, "1", topic_wire::meta_key(p.topic), topic_wire::channel(p.topic),
                                std::to_string(p.skips), origin, epoch},
                               std::move(answered));
                continue;
            }
            const std::string meta = topic_wire::meta_key(p.topic), stream = topic_wire::stream_key(p.topic),
                              sent_by = topic_wire::origin_key(p.topic, origin), channel = topic_wire::channel(p.topic),
                              history = std::to_string(options.history), ttl = std::to_string(options.history_ttl_s),
                              sequence = std::to_string(p.sequence), epoch = origin + "." + sequence;
            commands->send({"EVALSHA", publish_sha, "3", meta, stream, sent_by, channel, history, ttl, origin, sequence,
                            p.binary ? "b" : "t", epoch, p.data},
                           std::move(answered));
        }
    }

    void published(resp::Value& reply) {
        if (queue.empty() || sent == 0) return;
        bool skip_it = false;
        if (reply.type == resp::Type::error) {
            if (reply.text.starts_with("NOSCRIPT")) {
                lost("its scripts are gone (NOSCRIPT): loading them again");
                return;
            }
            // Refused for now (loading after a restart, a replica, out of memory, busy): kept, and
            // sent again in order after a back-off.
            for (const std::string_view now : {"LOADING", "READONLY", "OOM", "MASTERDOWN", "BUSY", "TRYAGAIN",
                                               "CLUSTERDOWN", "NOREPLICAS"})
                if (reply.text.starts_with(now)) {
                    refusing = true;
                    log_error("Redis refuses publishes for now (" + reply.text + "): they wait, and go again");
                    lost("Redis refused a publish for now: " + reply.text);
                    return;
                }
            // Refused for good: the other hosts must see a hole where it would have been.
            ++counts.failed;
            log_error("a publish to topic '" + queue.front().topic + "' was refused: " + reply.text +
                      "; the other hosts' subscribers are told of a gap");
            skip_it = queue.front().skips == 0;
        } else if (queue.front().skips == 0 && number_of(reply) > 0) {
            ++counts.published;
            refusing = false;
        }
        const Pending done = std::move(queue.front());
        queued_bytes -= done.data.size();
        queue.pop_front();
        --sent;
        if (settled_fn && done.skips == 0) settled_fn(done.cookie, done.data.size());
        if (skip_it) skip(done.topic);  // its hole, so that the other hosts say a gap
        send_queued();
    }

    void skip(std::string_view topic) {
        // Coalesced with a skip of the same topic still waiting at the queue's tail.
        if (!queue.empty() && queue.size() > sent && queue.back().skips && queue.back().topic == topic) {
            ++queue.back().skips;
            return;
        }
        queue.push_back({std::string(topic), {}, false, 0, Clock::now(), 0, 1});
        send_queued();
    }

    bool publish(std::string_view topic, std::string_view data, bool binary, std::uint64_t cookie) {
        if (queued_bytes > 0 && queued_bytes + data.size() > 2 * options.queue_bytes) {
            ++counts.refused;
            log_error("the queue of publishes waiting for Redis holds twice --cluster-queue (" +
                      std::to_string(options.queue_bytes) + " bytes): a publish reaches this host only");
            skip(topic);  // the other hosts see its hole
            return false;
        }
        queue.push_back({std::string(topic), std::string(data), binary, next_sequence++, Clock::now(), cookie});
        queued_bytes += data.size();
        send_queued();
        return true;
    }

    // --- subscriptions ---------------------------------------------------------------

    void want(std::string_view topic) {
        if (!wanted.emplace(topic).second) return;
        positions.add(topic);
        if (subscriptions_up) subscriptions->send({"SUBSCRIBE", topic_wire::channel(topic)});
    }

    void unwant(std::string_view topic) {
        const auto it = wanted.find(std::string(topic));
        if (it == wanted.end()) return;
        wanted.erase(it);
        positions.remove(topic);
        if (subscriptions_up) subscriptions->send({"UNSUBSCRIBE", topic_wire::channel(topic)});
    }

    void pushed(resp::Value& value) {
        if (value.type != resp::Type::array || value.items.size() < 3 || value.items[0].type != resp::Type::bulk) return;
        const std::string_view kind = value.items[0].text;
        const std::string_view topic = topic_wire::topic_of_channel(value.items[1].text);
        if (topic.empty()) return;
        if (kind == "subscribe") {
            positions.subscribed(topic, *this);
        } else if (kind == "message") {
            ClusterMessage message;
            if (value.items[2].type == resp::Type::bulk && topic_wire::parse_live(value.items[2].text, message))
                positions.live(topic, message, *this);
            else
                log_error("a message on topic '" + std::string(topic) + "' is not one cspd published: ignored");
        }
    }

    // --- TopicPositions::Actions -----------------------------------------------------

    void deliver(std::string_view topic, const ClusterMessage& message) override {
        ++counts.received;
        deliver_fn(topic, message.data, message.binary);
    }

    void gap(std::string_view topic) override {
        spdlog::warn("cluster: topic '{}' lost messages this host's subscribers never got (its history no longer "
                     "reaches back): they are told",
                     topic);
        gap_fn(topic);
    }

    void recover(std::string_view topic, std::string_view after_id) override {
        if (!commands_up) return;  // a cut: the topic recovers once subscribed again
        const std::string meta = topic_wire::meta_key(topic), stream = topic_wire::stream_key(topic),
                          start = after_id.empty() ? std::string("-") : "(" + std::string(after_id),
                          count = std::to_string(kRecoverPage);
        commands->send({"EVALSHA", recover_sha, "2", meta, stream, start, count},
                       [weak = weak_from_this(), attempt = generation, name = std::string(topic)](resp::Value& reply) {
                           if (auto self = weak.lock(); self && self->generation == attempt) self->recovered(name, reply);
                       });
    }

    void recovered(const std::string& topic, resp::Value& reply) {
        if (reply.type != resp::Type::array || reply.items.size() != 3 || reply.items[0].type != resp::Type::bulk ||
            reply.items[2].type != resp::Type::array) {
            lost("reading topic '" + topic + "''s history failed: " +
                 (reply.type == resp::Type::error ? reply.text : std::string("an unexpected answer")));
            return;
        }
        const std::string_view epoch = reply.items[0].text;
        std::vector<ClusterMessage> entries;
        entries.reserve(reply.items[2].items.size());
        for (const resp::Value& entry : reply.items[2].items) {
            ClusterMessage message;
            if (topic_wire::parse_entry(entry, epoch, message)) entries.push_back(message);
        }
        const bool more = reply.items[2].items.size() >= kRecoverPage;
        positions.recovered(topic, epoch, number_of(reply.items[1]), entries, more, *this);
    }

    void ask_start(std::string_view topic) override {
        if (!commands_up) return;
        commands->send({"HMGET", topic_wire::meta_key(topic), "e", "o"},
                       [weak = weak_from_this(), attempt = generation, name = std::string(topic)](resp::Value& reply) {
                           auto self = weak.lock();
                           if (!self || self->generation != attempt) return;
                           if (reply.type != resp::Type::array || reply.items.size() != 2) return;
                           const resp::Value& epoch = reply.items[0];
                           self->positions.started(name, epoch.type == resp::Type::bulk ? epoch.text : std::string_view(),
                                                   number_of(reply.items[1]), *self);
                       });
    }

    void log_error(const std::string& what) {
        const Clock::time_point now = Clock::now();
        if (now - last_error_log < 10s) return;
        last_error_log = now;
        spdlog::error("cluster: {}", what);
    }
};

ClusterLink::ClusterLink(asio::io_context& io, ClusterOptions options, Deliver deliver, Gap gap, Settled settled)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(deliver), std::move(gap), std::move(settled))) {}

ClusterLink::~ClusterLink() {
    ++impl_->generation;
    impl_->retry.cancel();
    impl_->ping.cancel();
    impl_->commands.reset();
    impl_->subscriptions.reset();
}

void ClusterLink::start() {
    impl_->connect();
    impl_->keep_pinging();
}

bool ClusterLink::publish(std::string_view topic, std::string_view data, bool binary, std::uint64_t cookie) {
    return impl_->publish(topic, data, binary, cookie);
}

void ClusterLink::skip(std::string_view topic) { impl_->skip(topic); }

void ClusterLink::want(std::string_view topic) { impl_->want(topic); }

void ClusterLink::unwant(std::string_view topic) { impl_->unwant(topic); }

ClusterReport ClusterLink::report() const {
    ClusterReport report = impl_->counts;
    report.connected = impl_->commands_up && impl_->subscriptions_up;
    report.recovered = impl_->positions.recovered_count();
    report.gaps = impl_->positions.gap_count();
    report.queue_bytes = impl_->queued_bytes;
    report.lag_ms = impl_->queue.empty() ? 0
                                         : std::uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                             Clock::now() - impl_->queue.front().at)
                                                             .count());
    report.topics = impl_->wanted.size();
    return report;
}

}  // namespace cspd
