// A host's link to the cluster's Redis (--cluster), on one Asio loop (the master's): what this
// host's workers publish goes out once, recorded in the topic's stream and published in one
// round trip; what other hosts publish to a topic this host's conversations subscribe to comes
// in once, and goes to the workers. Two connections: one for commands, one for the subscriptions
// (a subscribed connection takes no other command).
//
// Never silent: while Redis cannot be reached, publishes wait in a queue and go in order once it
// is back (a publish sent twice is recorded once); one Redis refuses for now (loading, read-only,
// out of memory) waits too. The workers keep the queue to --cluster-queue (each reserves a
// publish's bytes before sending it here, and csp_publish says CSP_AGAIN past it): settled() gives
// the bytes back once Redis has answered. Here the queue is refused only past twice the bound, a
// safety net against a worker that does not keep to it. A publish that does not cross (kept home,
// refused for good) leaves a skip marker in its topic's offsets, so the other hosts see the hole.
// After a cut each topic reads what it missed from its stream (TopicPositions), and a gap is said
// where the stream no longer reaches back. Reconnects back off from 100 ms to 5 s, and never give up.
#pragma once

#include "cluster/redis_address.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace cspd {

struct ClusterOptions {
    RedisAddress address;
    std::size_t history = 1000;          ///< --cluster-history: entries kept per topic
    unsigned history_ttl_s = 600;        ///< --cluster-history-ttl: seconds an entry is kept at most
    std::size_t queue_bytes = 16u << 20;  ///< --cluster-queue: publishes waiting for Redis, at most
    std::size_t max_message = 1u << 20;   ///< --ws-max-message: no message is larger (what Redis may send is bounded by it)
};

/// What the link has done; read on its loop.
struct ClusterReport {
    bool connected = false;
    std::uint64_t published = 0;   ///< recorded by Redis
    std::uint64_t received = 0;    ///< delivered to this host's workers, live or recovered
    std::uint64_t recovered = 0;   ///< of those, read from a topic's history after a cut
    std::uint64_t gaps = 0;        ///< times a topic's subscribers were told messages were lost
    std::uint64_t reconnects = 0;
    std::uint64_t refused = 0;     ///< publishes refused here: the queue held twice its bound
    std::uint64_t failed = 0;      ///< publishes Redis answered with an error (logged)
    std::uint64_t queue_bytes = 0;  ///< publishes waiting for Redis's answer
    std::uint64_t lag_ms = 0;      ///< how long the oldest of them has waited
    std::uint64_t topics = 0;      ///< subscribed across hosts now
};

class ClusterLink {
public:
    using Deliver = std::function<void(std::string_view topic, std::string_view data, bool binary)>;
    using Gap = std::function<void(std::string_view topic)>;
    /// Redis answered for the publish given `cookie` (recorded, or refused with an error, logged).
    using Settled = std::function<void(std::uint64_t cookie, std::size_t bytes)>;

    ClusterLink(boost::asio::io_context& io, ClusterOptions options, Deliver deliver, Gap gap, Settled settled = {});
    ~ClusterLink();
    ClusterLink(const ClusterLink&) = delete;
    ClusterLink& operator=(const ClusterLink&) = delete;

    /// Connects (and keeps connecting).
    void start();
    /// A message this host's workers published (and delivered here already): false when the queue
    /// holds twice --cluster-queue (it does not cross; nothing is settled for it).
    bool publish(std::string_view topic, std::string_view data, bool binary, std::uint64_t cookie = 0);
    /// A publish to `topic` stayed on this host: the topic's offsets skip one, in order with the
    /// host's other publishes, so that the other hosts see the hole and say a gap.
    void skip(std::string_view topic);
    /// This host's first subscriber to `topic` came; its last one went.
    void want(std::string_view topic);
    void unwant(std::string_view topic);

    ClusterReport report() const;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace cspd
