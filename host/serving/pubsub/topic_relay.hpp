// Carries csp_publish to the other worker processes of the server, so that a topic's subscribers
// hear a message whichever worker holds their connection. Each worker binds a datagram socket in
// the abstract namespace, named after the master, its own index and a bank (a or b: a successor
// started while the worker it replaces still serves takes the other); a publish is queued here
// (never waiting) and a sender thread writes it to every other worker's socket, cut into chunks of
// kChunk bytes; a receiver thread puts what comes into this worker's subscribers' outboxes. Unix
// datagrams from one socket arrive whole and in order, and one thread sends them: the messages of
// one publisher reach every worker in the order they were published.
//
// Only processes of the same user whose parent is the master are heard (SCM_CREDENTIALS): another
// local account cannot publish into the server's topics. A worker that is restarting misses what
// is published meanwhile. A send waits up to 200 ms for a busy worker to read; one that does not is
// passed over for a second and loses what is published then (counted and logged), rather than
// holding up the others.
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
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace cspd {

class TopicRelay {
public:
    /// What a message from another worker is handed to (the TopicBoard's own subscribers).
    using Deliver = std::function<void(std::string_view topic, std::string_view data, bool binary)>;

    /// The largest piece of a message in one datagram.
    static constexpr std::size_t kChunk = 48 * 1024;
    /// Publishes waiting to be sent to the other workers, in bytes; past it they are dropped (logged).
    static constexpr std::size_t kMaxQueued = 64 * 1024 * 1024;

    /// Worker `index` of `workers` under master `master`: binds its socket and starts its threads.
    /// Throws if the socket cannot be made.
    TopicRelay(pid_t master, unsigned index, unsigned workers, Deliver deliver);
    ~TopicRelay();
    TopicRelay(const TopicRelay&) = delete;
    TopicRelay& operator=(const TopicRelay&) = delete;

    /// Queues one published message for the other workers; false if the queue is full.
    bool forward(std::string_view topic, std::string_view data, bool binary);

    /// Messages the other workers could not be sent (a worker not reading), and ones refused here.
    std::uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

private:
    struct Message {
        std::string topic, data;
        bool binary;
    };
    struct Partial {
        std::uint64_t id = 0;
        std::string topic, data;
        bool binary = false;
    };
    void send_loop();
    void receive_loop();
    void send_to_all(const Message& message);
    void receive_one(const char* bytes, std::size_t size, pid_t sender);
    bool trusted(pid_t sender, uid_t uid);

    const pid_t master_;
    const unsigned index_;
    const unsigned workers_;
    unsigned bank_ = 0;  // which of its index's two names this process holds
    Deliver deliver_;
    int socket_ = -1;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Message> queue_;
    std::size_t queued_bytes_ = 0;
    bool stopping_ = false;
    std::uint64_t next_id_ = 1;  // send thread only
    std::vector<std::chrono::steady_clock::time_point> stalled_until_;  // send thread only: by target
    std::unordered_map<pid_t, Partial> partial_;  // receive thread only: messages coming in pieces
    std::unordered_map<pid_t, bool> verdicts_;     // receive thread only: senders checked
    std::atomic<std::uint64_t> lost_{0};
    std::thread sender_, receiver_;
};

}  // namespace cspd
