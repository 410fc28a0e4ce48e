// The worker's threads for blocking handlers (CSP_BLOCKING_HANDLER): calls run here, never
// on an event loop. Threads start as work arrives, up to --blocking-threads; past them,
// calls queue up to --blocking-queue, and past that submit() refuses (the client gets 503).
// A call that runs longer than --handler-timeout is stuck: its client has been answered 504
// by the loop, and its thread is counted until it comes back. A call that waits for its client
// (a stream's write waiting for room) is not stuck: see ClientWait.
// One per process, shared by its event loops: submit() takes its lock from any loop, and each
// call's answer goes back to the loop that submitted it through that loop's inbox.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cspd {

struct LoopSlot;

class BlockingPool {
public:
    /// With `slot`, the numbers of running, queued and refused calls are kept there for /metrics.
    BlockingPool(unsigned threads, std::size_t queue_limit, LoopSlot* slot = nullptr);
    /// Joins the threads that come back within `grace`; the others are left running (see stuck()).
    ~BlockingPool();
    BlockingPool(const BlockingPool&) = delete;
    BlockingPool& operator=(const BlockingPool&) = delete;

    /// Queues `job` for a thread; false when every thread is busy and the queue is full.
    bool submit(std::function<void()> job);

    /// Threads whose current call began longer ago than `limit`.
    unsigned stuck(std::chrono::steady_clock::duration limit) const;
    unsigned threads() const { return max_threads_; }
    /// Calls running and queued now.
    std::size_t load() const;

    /// While one lives, the calling pool thread (if it is one) waits for its client, not in handler
    /// code: it is not counted as stuck, and its call's clock starts again afterwards.
    class ClientWait {
    public:
        ClientWait();
        ~ClientWait();
        ClientWait(const ClientWait&) = delete;
        ClientWait& operator=(const ClientWait&) = delete;
    };

    /// Stops taking work; waits up to `grace` for the threads, true if every one came back.
    bool stop(std::chrono::steady_clock::duration grace);

private:
    /// What the pool reads of one thread's call. Shared with the thread, which may outlive the
    /// pool (a stuck call at shutdown).
    struct Mark {
        std::atomic<std::int64_t> busy_since{0};  // steady-clock ns; 0: idle
        std::atomic<bool> waiting_for_client{false};
    };
    struct Worker {
        std::thread thread;
        std::shared_ptr<Mark> mark = std::make_shared<Mark>();
    };
    void run(std::size_t index);
    /// The mark of the calling thread's call, if it is a pool thread.
    static std::shared_ptr<Mark>& current();
    void publish();  // under mutex_
    const unsigned max_threads_;
    const std::size_t queue_limit_;
    LoopSlot* const slot_;
    unsigned busy_ = 0;
    mutable std::mutex mutex_;
    std::condition_variable wake_, gone_;
    std::deque<std::function<void()>> queue_;
    std::deque<Worker> workers_;  // a deque: references stay valid as it grows
    unsigned idle_ = 0;
    unsigned running_threads_ = 0;
    bool stopping_ = false;
};

} // namespace cspd
