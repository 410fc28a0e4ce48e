// The way onto one event loop's thread from any other thread (a handler finishing a
// deferred reply, a blocking call that returned), safe after the loop is gone: posts
// are then refused. Shared by the loop and whatever may outlive it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

namespace cspd {

class LoopInbox {
public:
    explicit LoopInbox(boost::asio::io_context& io) : io_(&io) {}

    /// Runs `fn` on the loop's thread; false (and `fn` is dropped here) once the loop is gone.
    template <class Fn>
    bool post(Fn&& fn) {
        std::lock_guard lock(mutex_);
        if (!io_) return false;
        boost::asio::post(*io_, std::forward<Fn>(fn));
        return true;
    }

    /// The loop runs on the calling thread from now on.
    void bind_to_this_thread() {
        loop_thread_.store(std::this_thread::get_id());
        an_event_loop() = true;
    }
    bool on_loop_thread() const { return loop_thread_.load() == std::this_thread::get_id(); }
    /// The calling thread runs an event loop (any loop): it must never wait.
    static bool on_an_event_loop() { return an_event_loop(); }

    /// The loop is going away: later posts are refused.
    void close() {
        std::lock_guard lock(mutex_);
        io_ = nullptr;
    }

private:
    static bool& an_event_loop() {
        thread_local bool is = false;
        return is;
    }
    std::mutex mutex_;
    boost::asio::io_context* io_;
    std::atomic<std::thread::id> loop_thread_{};
};

} // namespace cspd
