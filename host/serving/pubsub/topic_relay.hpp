// Carries csp_publish to the other worker processes of the server, so that a topic's subscribers
// hear a message whichever worker holds their connection. Each worker binds a datagram socket in
// the abstract namespace, named after the master, its own index and a bank (a or b: a successor
// started while the worker it replaces still serves takes the other); a publish is queued here
// (never waiting) and a sender thread writes it to every other worker's socket, cut into chunks of
// kChunk bytes; a receiver thread puts what comes into this worker's subscribers' outboxes. Unix
// datagrams from one socket arrive whole and in order, and one thread sends them: the messages of
// one publisher reach every worker in the order they were published.
//
// With --cluster the master holds one too (the host's link to Redis): a worker's publishes go to
// it as well, and so do the topics the worker's conversations subscribe to (its first subscriber
// came, its last went); the master sends what other hosts published, and a topic's gap (messages
// lost for good), to every worker.
//
// Only the master and processes whose parent is the master are heard (SCM_CREDENTIALS, which the
// kernel vouches for): no other local process can publish into the server's topics, and only the
// master can say a gap. A worker that is restarting misses what is published meanwhile. A send
// waits up to 200 ms for a busy worker to read; one that does not is passed over for a second and
// loses what is published then (counted and logged), rather than holding up the others.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace cspd {

struct SharedStats;

class TopicRelay {
public:
    /// What a message from another process is handed to (a worker: the TopicBoard's own
    /// subscribers; the master: the cluster link).
    using Deliver = std::function<void(std::string_view topic, std::string_view data, bool binary)>;
    /// A worker: the master says `topic` lost messages for good. The master: worker `pid` has a
    /// first subscriber to `topic` (`subscribed`), or lost its last.
    using Gap = std::function<void(std::string_view topic)>;
    using Interest = std::function<void(pid_t worker, std::string_view topic, bool subscribed)>;
    /// The master: a worker's publish, to send across hosts; `slot` (the worker's first loop slot)
    /// is where it reserved the message's bytes of --cluster-queue.
    using Published =
        std::function<void(pid_t worker, unsigned slot, std::string_view topic, std::string_view data, bool binary)>;
    /// The master: a worker kept a publish to `topic` on its host (--cluster-queue was full): the
    /// other hosts must see a hole there, and say a gap.
    using Skipped = std::function<void(std::string_view topic)>;
    /// What a relay hands on. A worker's: deliver, gap. The master's: interest, published.
    struct Receivers {
        Deliver deliver;
        Gap gap;
        Interest interest;
        Published published;
        Skipped skipped;
    };
    /// Topic names are 1 to 128 bytes (csp_ws_subscribe's rule); a datagram naming another is dropped.
    static constexpr std::size_t kMaxTopic = 128;

    /// The master's index.
    static constexpr unsigned kMaster = ~0u;

    /// The largest piece of a message in one datagram.
    static constexpr std::size_t kChunk = 48 * 1024;
    /// Publishes waiting to be sent to the other workers, in bytes; past it they are dropped (logged).
    static constexpr std::size_t kMaxQueued = 64 * 1024 * 1024;

    /// Worker `index` (or kMaster) of `workers` under master `master`: binds its socket and starts
    /// its threads. `cluster`: the master holds a relay too (--cluster). Throws if the socket
    /// cannot be made.
    TopicRelay(pid_t master, unsigned index, unsigned workers, bool cluster, Receivers receivers);
    ~TopicRelay();
    TopicRelay(const TopicRelay&) = delete;
    TopicRelay& operator=(const TopicRelay&) = delete;

    /// Queues one published message for the other workers, and for the master unless `here_only`
    /// (a worker's, with --cluster); false if the queue is full.
    bool forward(std::string_view topic, std::string_view data, bool binary, bool here_only = false);
    /// A worker's first subscriber to `topic` came, or its last went: told to the master (--cluster).
    bool interest(std::string_view topic, bool subscribed);
    /// The master: `topic` lost messages for good, told to every worker.
    bool gap(std::string_view topic);
    /// A worker: a publish to `topic` stayed on this host (no room in --cluster-queue): the master
    /// makes the hole seen on the other hosts.
    bool skipped(std::string_view topic);
    /// A worker: a sender is trusted if `stats` lists its pid in a slot (the master writes each
    /// worker's there as it starts it). Without this, its parent must be the master (from /proc,
    /// which a sandboxed worker cannot read for other processes).
    void trust_workers_listed_in(const SharedStats& stats) { listed_ = &stats; }
    /// A worker with --cluster: its publishes on their way to Redis are reserved in `stats`'s slot
    /// `slot` (its first), and all workers' together are bounded by `bound` (--cluster-queue).
    void bound_cluster_queue(SharedStats& stats, unsigned slot, std::uint64_t bound) {
        stats_ = &stats;
        slot_ = slot;
        cluster_bound_ = bound;
    }
    /// Reserves room for a message of `bytes` on its way to Redis; false (nothing reserved, the
    /// refusal counted) when the host's publishes waiting already fill --cluster-queue.
    bool reserve_cluster_room(std::size_t bytes);
    /// Gives back what reserve_cluster_room took for a publish that was not sent after all.
    void release_cluster_room(std::size_t bytes);

    /// Messages the other workers could not be sent (a worker not reading), and ones refused here.
    std::uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

private:
    /// What a datagram carries (ChunkHead::kind).
    enum class Kind : std::uint8_t { message, subscribed, unsubscribed, gap, skipped };
    struct Message {
        std::string topic, data;
        bool binary;
        Kind kind;
        bool to_workers, to_master;
        bool reserved = false;  // its bytes are reserved in the cluster's queue (given back if it cannot be sent)
    };
    struct Partial {
        std::uint64_t id = 0;
        std::string topic, data;
        bool binary = false;
        unsigned slot = 0;
    };
    void send_loop();
    void receive_loop();
    bool enqueue(Message message);
    /// A whole message from `sender`: a worker delivers it, the master sends it across hosts.
    void hand_on(pid_t sender, unsigned slot, std::string_view topic, std::string_view data, bool binary);
    void send_to_all(const Message& message);
    enum class Sent { sent, absent, dropped };  // absent: no process holds that name
    /// dropped: `target` did not read (passed over for a second), or the send failed.
    Sent send_to(unsigned target, const Message& message, std::uint64_t id, std::chrono::steady_clock::time_point now);
    void receive_one(const char* bytes, std::size_t size, pid_t sender);
    bool trusted(pid_t sender);

    const pid_t master_;
    const unsigned index_;
    const unsigned workers_;
    unsigned bank_ = 0;  // which of its index's two names this process holds
    const bool cluster_;
    Receivers receivers_;
    SharedStats* stats_ = nullptr;  // with bound_cluster_queue
    const SharedStats* listed_ = nullptr;  // with trust_workers_listed_in
    unsigned slot_ = 0;
    std::uint64_t cluster_bound_ = 0;
    int socket_ = -1;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Message> queue_;
    std::size_t queued_bytes_ = 0;
    bool stopping_ = false;
    std::uint64_t next_id_ = 1;  // send thread only
    std::vector<std::chrono::steady_clock::time_point> stalled_until_;  // send thread only: by target (the master last)
    // The master's send thread: by worker target, topics a message it could not take was in (a gap
    // said to it once it reads again). Bounded: a worker stuck that long is restarted anyway.
    std::vector<std::set<std::string>> owed_gaps_;
    static constexpr std::size_t kMaxOwedGaps = 10000;
    std::unordered_map<pid_t, Partial> partial_;  // receive thread only: messages coming in pieces
    std::unordered_map<pid_t, bool> verdicts_;     // receive thread only: senders checked
    std::atomic<std::uint64_t> lost_{0};
    std::thread sender_, receiver_;
};

}  // namespace cspd
