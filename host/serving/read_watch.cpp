#include "serving/read_watch.hpp"

#include <spdlog/spdlog.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

namespace cspd {

namespace {
constexpr int kEventsPerDispatch = 256;  // events taken from the set per dispatch

int make_set() {
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "epoll_create1");
    return fd;
}
}  // namespace

ReadWatch::ReadWatch(boost::asio::io_context& io) : io_(io), set_(io, make_set()) {
    retired_.reserve(kEventsPerDispatch);  // a batch's forgets fit without allocating
}

ReadWatch::~ReadWatch() { clear(); }

bool ReadWatch::watch(int fd, std::shared_ptr<Reader> reader) {
    if (fd < 0) return false;
    if (static_cast<std::size_t>(fd) >= entries_.size()) entries_.resize(static_cast<std::size_t>(fd) * 2 + 64);
    Entry& entry = entries_[static_cast<std::size_t>(fd)];
    if (!entry.reader) entry.reader = std::move(reader);
    entry.wanted = true;
    if (!entry.in_set) {
        epoll_event event{};
        event.events = EPOLLIN | EPOLLRDHUP;  // level-triggered
        event.data.fd = fd;
        if (::epoll_ctl(set_.native_handle(), EPOLL_CTL_ADD, fd, &event) != 0) {
            spdlog::warn("cannot watch descriptor {}: {}", fd, std::strerror(errno));
            entry = Entry{};
            return false;
        }
        entry.in_set = true;
        ++in_set_;
    }
    arm();
    return true;
}

bool ReadWatch::rewatch(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= entries_.size()) return false;
    Entry& entry = entries_[static_cast<std::size_t>(fd)];
    if (!entry.reader || !entry.in_set) return false;
    entry.wanted = true;
    arm();
    return true;
}

void ReadWatch::forget(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= entries_.size()) return;
    Entry& entry = entries_[static_cast<std::size_t>(fd)];
    if (entry.in_set) {
        // Taken out now rather than by the close: a descriptor a child process still shares
        // would stay in the set, readable, after its number went to a new connection.
        ::epoll_ctl(set_.native_handle(), EPOLL_CTL_DEL, fd, nullptr);
        --in_set_;
    }
    std::shared_ptr<Reader> reader = std::move(entry.reader);
    entry = Entry{};
    let_go(std::move(reader));
    stop_waiting_if_empty();
}

void ReadWatch::let_go(std::shared_ptr<Reader>&& reader) noexcept {
    if (!reader || !dispatching_) return;  // `reader` goes out of scope in the caller
    try {
        retired_.push_back(std::move(reader));
    } catch (const std::bad_alloc&) {
        // Past the reserve and out of memory. The reader may be inside its own call: it is
        // leaked (its reference is never dropped) rather than freed while in use.
        alignas(std::shared_ptr<Reader>) unsigned char kept[sizeof(std::shared_ptr<Reader>)];
        new (kept) std::shared_ptr<Reader>(std::move(reader));
    }
}

void ReadWatch::stop_waiting_if_empty() {
    // A pending wait is work: it would keep a draining loop's run() from returning.
    if (in_set_ != 0 || !armed_) return;
    boost::system::error_code ec;
    set_.cancel(ec);
}

void ReadWatch::clear() {
    for (std::size_t fd = 0; fd < entries_.size(); ++fd)
        if (entries_[fd].in_set) ::epoll_ctl(set_.native_handle(), EPOLL_CTL_DEL, static_cast<int>(fd), nullptr);
    std::vector<Entry> gone;
    gone.swap(entries_);
    for (Entry& entry : gone) let_go(std::move(entry.reader));
    in_set_ = 0;
    boost::system::error_code ec;
    set_.cancel(ec);
}

void ReadWatch::arm() {
    if (armed_ || in_set_ == 0) return;
    armed_ = true;
    set_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
        armed_ = false;
        if (!ec) return dispatch();
        // Cancelled because the set emptied; a watch() made before this ran found armed_ still
        // set and did not arm: arm now if anything is in the set again.
        arm();
    });
}

void ReadWatch::dispatch() {
    epoll_event ready[kEventsPerDispatch];
    const int count = ::epoll_wait(set_.native_handle(), ready, kEventsPerDispatch, 0);
    dispatching_ = true;
    for (int i = 0; i < count; ++i) {
        const int fd = ready[i].data.fd;
        if (static_cast<std::size_t>(fd) >= entries_.size()) continue;
        Entry& entry = entries_[static_cast<std::size_t>(fd)];
        if (!entry.reader || !entry.in_set) continue;  // forgotten earlier in this batch
        if (!entry.wanted) {
            // Readable while its connection does not want to read (it writes, or holds all it may):
            // out of the set until it watches again, or level-triggering would repeat this.
            ::epoll_ctl(set_.native_handle(), EPOLL_CTL_DEL, fd, nullptr);
            entry.in_set = false;
            --in_set_;
            continue;  // (the wait is re-armed below only while something is in the set)
        }
        entry.wanted = false;
        // Alive through the call: forgotten meanwhile, it waits in retired_. (`entry` may move:
        // a watch() in the call can grow entries_.)
        entry.reader->on_readable();
    }
    dispatching_ = false;
    retired_.clear();  // readers forgotten in this batch; may destroy connections
    arm();  // a full batch leaves the set readable: the next pass takes the rest
}

}  // namespace cspd
