// Connections waiting to read -- their next request, the client leaving while an answer is
// owed, the end of a lingering close -- watched by an epoll set of the loop's own.
// Why not Asio's waits: Asio's reactor is edge-triggered and re-arms a descriptor with an
// epoll_ctl for every wait, one syscall per keep-alive request. This set is level-triggered: a
// connection goes in once and stays while it keeps reading, so nothing is lost between passes
// and the steady keep-alive path makes no epoll_ctl at all. The loop's io_context watches the
// set's one descriptor. Loop thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace cspd {

class ReadWatch {
public:
    class Reader {
    public:
        /// The descriptor has bytes, EOF or an error. The wish to hear of it was used up:
        /// watch() again to hear of the next.
        virtual void on_readable() = 0;

    protected:
        ~Reader() = default;
    };

    explicit ReadWatch(boost::asio::io_context& io);
    ~ReadWatch();
    ReadWatch(const ReadWatch&) = delete;
    ReadWatch& operator=(const ReadWatch&) = delete;

    /// `reader` hears once when `fd` is readable (at once if it already is). It is held alive
    /// until forget(fd). False if the kernel refuses the descriptor.
    bool watch(int fd, std::shared_ptr<Reader> reader);
    /// watch() for a descriptor whose reader is still in the set (the steady keep-alive case):
    /// no reference is taken or syscall made. False if it is not, and watch() is needed.
    bool rewatch(int fd);
    /// Call before closing `fd`: it leaves the set, nothing more is heard of it, and `reader` is
    /// let go (the caller must hold its own reference through this call). From a reader's own
    /// on_readable, it is let go only once that call has returned.
    void forget(int fd);
    /// No more calls: what is still held is let go (the loop is ending).
    void clear();
    /// The loop's reactor, for waits this set does not take (room to write).
    boost::asio::io_context& io() { return io_; }

private:
    struct Entry {
        std::shared_ptr<Reader> reader;  // set from the first watch() until forget()
        bool in_set = false;             // in the epoll set (taken out when it fires unwanted)
        bool wanted = false;             // a watch() not yet answered
    };
    void arm();
    void dispatch();
    void stop_waiting_if_empty();
    /// Lets `reader` go now, or after the dispatch in progress.
    void let_go(std::shared_ptr<Reader>&& reader) noexcept;

    boost::asio::io_context& io_;
    boost::asio::posix::stream_descriptor set_;
    std::vector<Entry> entries_;  // by descriptor
    std::size_t in_set_ = 0;      // while zero the set is not waited on: a drained loop can end
    bool armed_ = false;
    // While dispatch() calls readers, the ones forgotten wait here: a reader is called through a
    // plain pointer, not a copy of its shared_ptr (two atomic operations per request).
    bool dispatching_ = false;
    std::vector<std::shared_ptr<Reader>> retired_;
};

}  // namespace cspd
