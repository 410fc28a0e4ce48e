// The worker's threads for blocking handlers (CSP_BLOCKING_HANDLER): calls run here, never
// on an event loop. Threads start as work arrives, up to --blocking-threads; past them,
// calls queue up to --blocking-queue, and past that submit() refuses (the client gets 503).
// A call that runs longer than --handler-timeout is stuck: its client has been answered 504
// by the loop, and its thread is counted until it comes back.
#pragma once

#include <chrono>
#include <condition_variable>
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

    /// Stops taking work; waits up to `grace` for the threads, true if every one came back.
    bool stop(std::chrono::steady_clock::duration grace);

private:
    struct Worker {
        std::thread thread;
        std::chrono::steady_clock::time_point busy_since{};  // epoch: idle
    };
    void run(std::size_t index);
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
