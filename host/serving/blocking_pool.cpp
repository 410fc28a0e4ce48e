#include "serving/blocking_pool.hpp"

#include "common/crash_context.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

namespace cspd {
using Clock = std::chrono::steady_clock;

BlockingPool::BlockingPool(unsigned threads, std::size_t queue_limit, LoopSlot* slot)
    : max_threads_(threads == 0 ? 1 : threads), queue_limit_(queue_limit), slot_(slot) {}

void BlockingPool::publish() {
    if (!slot_) return;
    slot_->blocking_busy.store(busy_, std::memory_order_relaxed);
    slot_->blocking_queued.store(queue_.size(), std::memory_order_relaxed);
}

BlockingPool::~BlockingPool() { stop(std::chrono::seconds(1)); }

bool BlockingPool::submit(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    // Idle threads not yet claimed by a queued job: the new one takes one of them, or a new
    // thread while there may be more, or a place in the queue.
    const bool free_thread = idle_ > queue_.size();
    if (!free_thread && workers_.size() < max_threads_) {
        try {
            Worker& worker = workers_.emplace_back();
            ++running_threads_;
            worker.thread = std::thread([this, index = workers_.size() - 1] { run(index); });
        } catch (const std::system_error& e) {
            --running_threads_;
            workers_.pop_back();
            spdlog::error("blocking handlers: cannot start a thread: {}", e.what());
            if (workers_.empty() || queue_.size() - idle_ >= queue_limit_) {
                if (slot_) bump(slot_->blocking_refused);
                return false;
            }
        }
    } else if (!free_thread && queue_.size() - idle_ >= queue_limit_) {
        if (slot_) bump(slot_->blocking_refused);
        return false;
    }
    queue_.push_back(std::move(job));
    publish();
    wake_.notify_one();
    return true;
}

namespace {
std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
}  // namespace

std::shared_ptr<BlockingPool::Mark>& BlockingPool::current() {
    thread_local std::shared_ptr<Mark> mark;
    return mark;
}

BlockingPool::ClientWait::ClientWait() {
    if (const auto& mark = current()) mark->waiting_for_client = true;
}

BlockingPool::ClientWait::~ClientWait() {
    if (const auto& mark = current()) {
        mark->busy_since = now_ns();  // the call's clock starts again
        mark->waiting_for_client = false;
    }
}

void BlockingPool::run(std::size_t index) {
    install_thread_signal_stack();  // a handler's stack overflow is reported like a loop's
    std::unique_lock lock(mutex_);
    current() = workers_[index].mark;  // under the lock: workers_ may be growing
    for (;;) {
        ++idle_;
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        --idle_;
        if (queue_.empty()) break;  // stopping, and nothing left to run
        std::function<void()> job = std::move(queue_.front());
        queue_.pop_front();
        workers_[index].mark->busy_since = now_ns();
        ++busy_;
        publish();
        lock.unlock();
        job();
        job = nullptr;  // what the job held goes before the thread waits again
        lock.lock();
        workers_[index].mark->busy_since = 0;
        --busy_;
        publish();
    }
    --running_threads_;
    gone_.notify_all();
}

unsigned BlockingPool::stuck(Clock::duration limit) const {
    std::lock_guard lock(mutex_);
    const std::int64_t now = now_ns();
    const std::int64_t limit_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
    unsigned n = 0;
    for (const Worker& worker : workers_) {
        const std::int64_t since = worker.mark->busy_since;
        if (since != 0 && !worker.mark->waiting_for_client && now - since > limit_ns) ++n;
    }
    return n;
}

std::size_t BlockingPool::load() const {
    std::lock_guard lock(mutex_);
    std::size_t busy = 0;
    for (const Worker& worker : workers_) busy += worker.mark->busy_since != 0;
    return busy + queue_.size();
}

bool BlockingPool::stop(Clock::duration grace) {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    std::deque<std::function<void()>> never_run;
    never_run.swap(queue_);  // calls still waiting for a thread are not run now; destroyed unlocked
    publish();
    wake_.notify_all();
    const bool all = gone_.wait_for(lock, grace, [this] { return running_threads_ == 0; });
    lock.unlock();
    for (Worker& worker : workers_) {
        if (!worker.thread.joinable()) continue;
        // A thread still in a call cannot be joined: leave it to the process's exit.
        if (all) worker.thread.join();
        else worker.thread.detach();
    }
    return all;
}

} // namespace cspd
