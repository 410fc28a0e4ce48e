#include "serving/pubsub/topic_relay.hpp"

#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace cspd {
namespace {

constexpr std::uint32_t kMagic = 0x43535054;  // "CSPT"

/// What begins every datagram, in host order (both ends are this machine).
struct ChunkHead {
    std::uint32_t magic;
    std::uint32_t total;   // the message's bytes
    std::uint64_t id;      // the sender's count of messages
    std::uint32_t offset;  // where this chunk's data begins in the message
    std::uint16_t topic_size;
    std::uint8_t binary;
    std::uint8_t kind;   // TopicRelay::Kind
    std::uint16_t slot;  // the sender's first loop slot (where a publish's bytes are reserved)
    std::uint16_t unused;
};

/// Worker `index`'s socket name: two per index (`bank` 0 or 1), so that a worker's successor, started
/// while it still serves (a graceful replacement), has a name of its own; publishes go to both.
sockaddr_un address_of(pid_t master, unsigned index, unsigned bank, socklen_t& length) {
    sockaddr_un where{};
    where.sun_family = AF_UNIX;
    const std::string name = "cspd-" + std::to_string(master) + "-topics-" +
                             (index == TopicRelay::kMaster ? std::string("m") : std::to_string(index) + (bank ? "b" : "a"));
    // Abstract: a leading NUL, no file to leave behind or to guard.
    std::memcpy(where.sun_path + 1, name.data(), name.size());
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    return where;
}

pid_t parent_of(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    std::getline(stat, text);
    const std::size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos || close + 4 > text.size()) return -1;
    return static_cast<pid_t>(std::atol(text.c_str() + close + 4));  // ") S PPID"
}

}  // namespace

TopicRelay::TopicRelay(pid_t master, unsigned index, unsigned workers, bool cluster, Receivers receivers)
    : master_(master), index_(index), workers_(workers), cluster_(cluster), receivers_(std::move(receivers)) {
    socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (socket_ < 0) throw std::system_error(errno, std::system_category(), "topic relay socket");
    const int on = 1;
    ::setsockopt(socket_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    const int buffer = 4 * 1024 * 1024;  // capped by the system's rmem_max / wmem_max
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    ::setsockopt(socket_, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    // A peer's queue holds few datagrams (net.unix.max_dgram_qlen): a send waits for it to read, a
    // little, as a busy worker does; one that does not read in that time is passed over for a while.
    const timeval patience{0, 200'000};
    ::setsockopt(socket_, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
    // Bank a, or b when the worker this one replaces still holds a (it keeps it until it has
    // drained); a third process of one index waits for one to be free.
    for (int attempt = 0;; ++attempt) {
        socklen_t length = 0;
        const sockaddr_un mine = address_of(master_, index_, bank_ = attempt % 2, length);
        if (::bind(socket_, reinterpret_cast<const sockaddr*>(&mine), length) == 0) break;
        if (errno != EADDRINUSE || attempt == 200 || index_ == kMaster) {
            const int error = errno;
            ::close(socket_);
            throw std::system_error(error, std::system_category(), "topic relay bind");
        }
        if (attempt % 2) ::usleep(100'000);
    }
    stalled_until_.resize(2 * std::size_t(workers_) + 1);
    owed_gaps_.resize(2 * std::size_t(workers_));
    sender_ = std::thread([this] { send_loop(); });
    receiver_ = std::thread([this] { receive_loop(); });
}

TopicRelay::~TopicRelay() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    sender_.join();
    receiver_.join();
    ::close(socket_);
}

bool TopicRelay::forward(std::string_view topic, std::string_view data, bool binary, bool here_only) {
    const bool to_master = cluster_ && !here_only && index_ != kMaster;
    if (!to_master && index_ != kMaster && workers_ < 2) return true;  // nobody else to tell
    Message message{std::string(topic), std::string(data), binary, Kind::message, true, to_master};
    message.reserved = to_master && stats_;
    if (enqueue(std::move(message))) return true;
    if (to_master && stats_) release_cluster_room(data.size());
    return false;
}

bool TopicRelay::skipped(std::string_view topic) {
    if (!cluster_ || index_ == kMaster) return true;
    return enqueue({std::string(topic), {}, false, Kind::skipped, false, true});
}

bool TopicRelay::reserve_cluster_room(std::size_t bytes) {
    if (!stats_) return true;
    // Every worker's reservations: what the host has on its way to Redis.
    std::int64_t waiting = 0;
    const unsigned slots = std::min(stats_->slot_count.load(std::memory_order_relaxed), kMaxSlots);
    for (unsigned s = 0; s < slots; ++s) waiting += stats_->slots[s].cluster_reserved.load(std::memory_order_relaxed);
    if (waiting > 0 && std::uint64_t(waiting) + bytes > cluster_bound_) {
        stats_->cluster.refused.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    stats_->slots[slot_].cluster_reserved.fetch_add(std::int64_t(bytes), std::memory_order_relaxed);
    return true;
}

void TopicRelay::release_cluster_room(std::size_t bytes) {
    if (stats_) stats_->slots[slot_].cluster_reserved.fetch_sub(std::int64_t(bytes), std::memory_order_relaxed);
}

bool TopicRelay::interest(std::string_view topic, bool subscribed) {
    if (!cluster_ || index_ == kMaster) return true;
    return enqueue({std::string(topic), {}, false, subscribed ? Kind::subscribed : Kind::unsubscribed, false, true});
}

bool TopicRelay::gap(std::string_view topic) {
    if (index_ != kMaster) return false;
    return enqueue({std::string(topic), {}, false, Kind::gap, true, false});
}

bool TopicRelay::enqueue(Message message) {
    std::lock_guard lock(mutex_);
    if (queued_bytes_ + message.data.size() > kMaxQueued) {
        lost_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    queued_bytes_ += message.data.size();
    queue_.push_back(std::move(message));
    wake_.notify_one();
    return true;
}

void TopicRelay::send_loop() {
    for (;;) {
        Message message;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and everything was sent
            message = std::move(queue_.front());
            queue_.pop_front();
            queued_bytes_ -= message.data.size();
        }
        try {
            send_to_all(message);
        } catch (const std::bad_alloc&) {
            lost_.fetch_add(1, std::memory_order_relaxed);
            if (message.reserved) release_cluster_room(message.data.size());
        }
    }
}

void TopicRelay::send_to_all(const Message& message) {
    const std::uint64_t id = next_id_++;
    const auto now = std::chrono::steady_clock::now();
    if (message.to_workers)
        for (unsigned target = 0; target < 2 * workers_; ++target) {
            const unsigned peer = target / 2, bank = target % 2;
            if (peer == index_ && bank == bank_) continue;  // this process: its subscribers have it already
            if (index_ == kMaster && !owed_gaps_[target].empty() && now >= stalled_until_[target]) {
                // What a worker that stopped reading lost from other hosts: said before what follows.
                for (const std::string& topic : std::exchange(owed_gaps_[target], {}))
                    send_to(target, Message{topic, {}, false, Kind::gap, true, false}, next_id_++, now);
            }
            const Sent sent = send_to(target, message, id, now);
            if (sent == Sent::dropped && index_ == kMaster && message.kind == Kind::message &&
                owed_gaps_[target].size() < kMaxOwedGaps)
                owed_gaps_[target].insert(message.topic);
        }
    if (message.to_master && index_ != kMaster && send_to(2 * workers_, message, id, now) != Sent::sent &&
        message.reserved)
        release_cluster_room(message.data.size());  // the master never got it: nothing of it waits for Redis
}

TopicRelay::Sent TopicRelay::send_to(unsigned target, const Message& message, std::uint64_t id,
                                     std::chrono::steady_clock::time_point now) {
    const bool master = target == 2 * workers_;
    // What a host needs to stay right (a topic subscribed or left, a gap, a hole) is never passed
    // over: it is retried for a while, where a message would be dropped.
    const bool control = message.kind != Kind::message;
    if (!control && now < stalled_until_[target]) {
        lost_.fetch_add(1, std::memory_order_relaxed);
        return Sent::dropped;
    }
    socklen_t length = 0;
    const sockaddr_un where = address_of(master_, master ? kMaster : target / 2, target % 2, length);
    std::string datagram;
    std::size_t offset = 0;
    do {
        const std::size_t piece = std::min(kChunk, message.data.size() - offset);
        const ChunkHead head{kMagic,
                             static_cast<std::uint32_t>(message.data.size()),
                             id,
                             static_cast<std::uint32_t>(offset),
                             static_cast<std::uint16_t>(message.topic.size()),
                             static_cast<std::uint8_t>(message.binary),
                             static_cast<std::uint8_t>(message.kind),
                             static_cast<std::uint16_t>(slot_),
                             0};
        datagram.assign(reinterpret_cast<const char*>(&head), sizeof head);
        datagram.append(message.topic).append(message.data, offset, piece);
        ssize_t sent;
        int tries = 0;
        do {
            sent = ::sendto(socket_, datagram.data(), datagram.size(), 0, reinterpret_cast<const sockaddr*>(&where),
                            length);
        } while (sent < 0 && (errno == EINTR || (control && errno == EAGAIN && ++tries < 25)));
        if (sent < 0) {
            // ECONNREFUSED: no process holds that name (the other bank, or a worker restarting).
            // EAGAIN: it read nothing for 200 ms; it is passed over for a second, so that one
            // stalled process does not hold up the others' messages.
            if (errno == ECONNREFUSED) return Sent::absent;
            lost_.fetch_add(1, std::memory_order_relaxed);
            stalled_until_[target] = now + std::chrono::seconds(1);
            if (master)
                spdlog::warn("topics: the master is not reading ({}); what is published in the next second does "
                             "not reach other hosts",
                             std::strerror(errno));
            else
                spdlog::warn("topics: worker {} is not reading ({}); what is published in the next second is "
                             "lost for its subscribers{}",
                             target / 2, std::strerror(errno),
                             index_ == kMaster ? " (told of a gap once it reads again)" : "");
            return Sent::dropped;
        }
        offset += piece;
    } while (offset < message.data.size());
    return Sent::sent;
}

void TopicRelay::receive_loop() {
    std::string buffer(sizeof(ChunkHead) + 65536 + kChunk, '\0');
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
        }
        pollfd ready{socket_, POLLIN, 0};
        if (::poll(&ready, 1, 200) <= 0) continue;
        iovec io{buffer.data(), buffer.size()};
        msghdr header{};
        header.msg_iov = &io;
        header.msg_iovlen = 1;
        header.msg_control = control;
        header.msg_controllen = sizeof control;
        const ssize_t got = ::recvmsg(socket_, &header, MSG_DONTWAIT);
        if (got <= 0) continue;
        const cmsghdr* c = CMSG_FIRSTHDR(&header);
        if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS) continue;
        ucred who;
        std::memcpy(&who, CMSG_DATA(c), sizeof who);
        if (!trusted(who.pid)) continue;
        try {
            receive_one(buffer.data(), static_cast<std::size_t>(got), who.pid);
        } catch (const std::bad_alloc&) {
            partial_.erase(who.pid);  // that message is lost here; the thread goes on
            lost_.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

bool TopicRelay::trusted(pid_t sender) {
    // The master, or a process it started (a worker): workers may run as another account than the
    // master, so the sender's pid, which the kernel vouches for, is what is checked.
    if (sender == master_) return true;
    const auto known = verdicts_.find(sender);
    if (known != verdicts_.end()) return known->second;
    if (verdicts_.size() > 1024) verdicts_.clear();  // pids of workers long gone
    bool ours = false;
    if (listed_) {
        for (const LoopSlot& slot : listed_->slots) ours = ours || slot.pid.load(std::memory_order_relaxed) == sender;
    } else {
        ours = parent_of(sender) == master_;
    }
    if (!ours) spdlog::warn("topics: a datagram from pid {}, not a worker of this server, is ignored", sender);
    verdicts_[sender] = ours;
    return ours;
}

void TopicRelay::receive_one(const char* bytes, std::size_t size, pid_t sender) {
    ChunkHead head;
    if (size < sizeof head) return;
    std::memcpy(&head, bytes, sizeof head);
    // Whatever a worker's handler code might write here: a topic of 1 to 128 bytes, a message no
    // larger than what the queues hold.
    if (head.magic != kMagic || size < sizeof head + head.topic_size || head.topic_size == 0 ||
        head.topic_size > kMaxTopic || head.total > kMaxQueued || head.offset > head.total)
        return;
    const std::string_view topic(bytes + sizeof head, head.topic_size);
    const std::string_view piece(bytes + sizeof head + head.topic_size, size - sizeof head - head.topic_size);
    switch (static_cast<Kind>(head.kind)) {
    case Kind::message: break;
    case Kind::subscribed:
    case Kind::unsubscribed:
        if (index_ == kMaster && receivers_.interest)
            receivers_.interest(sender, topic, static_cast<Kind>(head.kind) == Kind::subscribed);
        return;
    case Kind::gap:
        // Only the master knows of gaps.
        if (sender == master_ && index_ != kMaster && receivers_.gap) receivers_.gap(topic);
        return;
    case Kind::skipped:
        if (index_ == kMaster && receivers_.skipped) receivers_.skipped(topic);
        return;
    default: return;
    }
    if (head.offset == 0 && piece.size() == head.total) {
        hand_on(sender, head.slot, topic, piece, head.binary != 0);  // the usual case: one datagram
        return;
    }
    Partial& partial = partial_[sender];
    if (head.offset == 0) {
        partial.id = head.id;
        partial.topic.assign(topic);
        partial.binary = head.binary != 0;
        partial.slot = head.slot;
        partial.data.clear();
        partial.data.reserve(head.total);
    } else if (partial.id != head.id || partial.data.size() != head.offset) {
        return;  // the beginning was lost (this worker started in the middle of it)
    }
    partial.data.append(piece);
    if (partial.data.size() >= head.total) {
        hand_on(sender, partial.slot, partial.topic, partial.data, partial.binary);
        partial_.erase(sender);
    }
}

void TopicRelay::hand_on(pid_t sender, unsigned slot, std::string_view topic, std::string_view data, bool binary) {
    if (index_ == kMaster) {
        if (receivers_.published) receivers_.published(sender, slot, topic, data, binary);
    } else if (receivers_.deliver) {
        receivers_.deliver(topic, data, binary);
    }
}

}  // namespace cspd
