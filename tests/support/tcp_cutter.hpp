// A TCP forwarder between a test's clients and a server on 127.0.0.1 that can fail the way a
// network does: cut every connection at once (clients see a reset), or stall them (a partition:
// nothing moves, nothing is closed). One background thread moves the bytes with poll(), through
// bounded buffers, for any number of connections.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

namespace cspd::test {

class TcpCutter {
public:
    /// Listens on 127.0.0.1 (a port the kernel picks) and forwards each connection to
    /// 127.0.0.1:`target`, which it connects to once it has accepted the client. Throws
    /// std::system_error if it cannot listen. A client whose target refuses is reset.
    explicit TcpCutter(unsigned short target);
    /// Stops the thread and closes every socket.
    ~TcpCutter();
    TcpCutter(const TcpCutter&) = delete;
    TcpCutter& operator=(const TcpCutter&) = delete;

    /// Where clients connect.
    unsigned short port() const { return port_; }

    /// Resets every forwarded connection at once, both sides (SO_LINGER 0: each peer sees
    /// ECONNRESET), and for `how_long` resets each new one as soon as it is accepted. (The kernel
    /// completes the handshake before anyone can accept, so a client's connect() itself succeeds;
    /// its first read or write fails at once, rather than hanging as it would if we stopped
    /// accepting.) Returns once the connections are closed, without waiting for the cut to end;
    /// cutting again while a cut is in force extends it.
    void cut(std::chrono::milliseconds how_long);
    /// For `how_long` no byte moves either way and nothing is closed: a partition without RST.
    /// Connections made meanwhile are accepted but not connected to the target until it ends.
    /// Returns once no byte moves; stalling again extends it.
    void stall(std::chrono::milliseconds how_long);

    /// Connections open now: those forwarded, and those accepted during a stall.
    std::size_t connections() const { return connections_.load(); }
    /// Bytes written to the target, and to clients from the target, since the start.
    std::uint64_t bytes_to_target() const { return to_target_.load(); }
    std::uint64_t bytes_from_target() const { return from_target_.load(); }

private:
    using Clock = std::chrono::steady_clock;

    void run();
    /// Asks the thread to apply what changed, and waits until it has.
    void apply_and_wait(std::unique_lock<std::mutex>& lock);
    void wake() const;

    unsigned short target_;
    unsigned short port_ = 0;
    int listener_ = -1;
    int wake_fd_ = -1;  ///< an eventfd: cut(), stall() and the destructor wake the thread

    std::mutex mutex_;  ///< guards what follows, up to the counters
    std::condition_variable applied_;
    Clock::time_point cut_until_{}, stall_until_{};
    bool cut_pending_ = false;  ///< the connections open now are to be reset
    bool stopping_ = false;
    std::uint64_t requested_ = 0, done_ = 0;  ///< changes asked for, and applied by the thread

    std::atomic<std::size_t> connections_{0};
    std::atomic<std::uint64_t> to_target_{0}, from_target_{0};
    std::thread thread_;  ///< runs run(); started once the sockets above are ready
};

}  // namespace cspd::test
