#include "tcp_cutter.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

namespace cspd::test {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kCutterBufferBytes = 16 * 1024;  // per direction and connection

// One direction of a connection: bytes read from its source, not yet written to its sink.
struct CutterPipe {
    std::vector<char> bytes = std::vector<char>(kCutterBufferBytes);
    std::size_t begin = 0, end = 0;
    bool source_done = false;  // the source sent its FIN
    bool sink_shut = false;    // and the sink was given it (shutdown SHUT_WR), once all was written
    bool empty() const { return begin == end; }
    bool has_room() const { return end - begin < bytes.size(); }
};

struct CutterLink {
    int client = -1;
    int target = -1;          // -1: not connected yet (accepted during a stall)
    bool connecting = false;  // the target's non-blocking connect is under way
    bool broken = false;      // an error on either side: both are reset
    CutterPipe up;            // client to target
    CutterPipe down;          // target to client
    bool finished() const { return up.sink_shut && down.sink_shut; }
};

// Closes with SO_LINGER 0: the peer gets a RST, not a FIN.
void cutter_reset(int& fd) {
    if (fd < 0) return;
    const linger abort{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(fd);
    fd = -1;
}

void cutter_close(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

void cutter_no_delay(int fd) {
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// Reads what `from` has, as far as `pipe` has room; false on an error.
bool cutter_fill(int from, CutterPipe& pipe) {
    if (pipe.source_done || !pipe.has_room()) return true;
    if (pipe.end == pipe.bytes.size()) {
        std::memmove(pipe.bytes.data(), pipe.bytes.data() + pipe.begin, pipe.end - pipe.begin);
        pipe.end -= pipe.begin;
        pipe.begin = 0;
    }
    const ssize_t n = ::recv(from, pipe.bytes.data() + pipe.end, pipe.bytes.size() - pipe.end, 0);
    if (n > 0) {
        pipe.end += static_cast<std::size_t>(n);
    } else if (n == 0) {
        pipe.source_done = true;
    } else {
        return errno == EAGAIN || errno == EINTR;
    }
    return true;
}

// Writes what `pipe` holds to `to` as far as it takes it, then passes the FIN on; false on an error.
bool cutter_drain(int to, CutterPipe& pipe, std::atomic<std::uint64_t>& moved) {
    while (!pipe.empty()) {
        const ssize_t n = ::send(to, pipe.bytes.data() + pipe.begin, pipe.end - pipe.begin, MSG_NOSIGNAL);
        if (n > 0) {
            pipe.begin += static_cast<std::size_t>(n);
            moved += static_cast<std::uint64_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return n < 0 && errno == EAGAIN;
        }
    }
    pipe.begin = pipe.end = 0;
    if (pipe.source_done && !pipe.sink_shut) {
        ::shutdown(to, SHUT_WR);
        pipe.sink_shut = true;
    }
    return true;
}

// Starts connecting `link` to 127.0.0.1:`port`; false if that fails at once.
bool cutter_connect(CutterLink& link, unsigned short port) {
    link.target = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (link.target < 0) return false;
    cutter_no_delay(link.target);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(link.target, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return true;
    link.connecting = errno == EINPROGRESS;
    return link.connecting;
}

}  // namespace

TcpCutter::TcpCutter(unsigned short target) : target_(target) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (listener_ < 0 || wake_fd_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, SOMAXCONN) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
        const int error = errno;
        cutter_close(listener_);
        cutter_close(wake_fd_);
        throw std::system_error(error, std::system_category(), "TcpCutter: cannot listen on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
}

TcpCutter::~TcpCutter() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake();
    thread_.join();
    cutter_close(listener_);
    cutter_close(wake_fd_);
}

void TcpCutter::cut(std::chrono::milliseconds how_long) {
    std::unique_lock lock(mutex_);
    cut_until_ = std::max(cut_until_, Clock::now() + how_long);
    cut_pending_ = true;
    apply_and_wait(lock);
}

void TcpCutter::stall(std::chrono::milliseconds how_long) {
    std::unique_lock lock(mutex_);
    stall_until_ = std::max(stall_until_, Clock::now() + how_long);
    apply_and_wait(lock);
}

void TcpCutter::apply_and_wait(std::unique_lock<std::mutex>& lock) {
    // The thread applies changes at the top of its loop, before it moves another byte: once it
    // says so, a stall is in force and a cut's connections are closed.
    const std::uint64_t mine = ++requested_;
    wake();
    applied_.wait_for(lock, 5s, [&] { return done_ >= mine; });
}

void TcpCutter::wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
}

// The only thread that touches the connections: they are its locals.
void TcpCutter::run() {
    std::vector<CutterLink> links;
    std::vector<pollfd> waits;
    const auto drop_ended = [&] {
        for (auto& link : links) {
            if (link.broken) {
                cutter_reset(link.client);
                cutter_reset(link.target);
            } else if (link.finished()) {
                cutter_close(link.client);
                cutter_close(link.target);
            }
        }
        std::erase_if(links, [](const CutterLink& link) { return link.client < 0; });
        connections_ = links.size();
    };
    for (;;) {
        bool stalled = false;
        int timeout = -1;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) break;
            if (cut_pending_) {
                for (auto& link : links) link.broken = true;
                cut_pending_ = false;
                drop_ended();
            }
            const auto now = Clock::now();
            stalled = now < stall_until_;
            if (stalled)  // woken when it ends; rounded up, so never before
                timeout = static_cast<int>(std::max<std::chrono::milliseconds::rep>(
                    1, std::chrono::ceil<std::chrono::milliseconds>(stall_until_ - now).count()));
            done_ = requested_;
        }
        applied_.notify_all();

        if (!stalled) {
            for (auto& link : links)
                if (link.target < 0 && !cutter_connect(link, target_)) link.broken = true;  // the target refuses
            drop_ended();
        }

        waits.clear();
        waits.push_back({wake_fd_, POLLIN, 0});
        waits.push_back({listener_, POLLIN, 0});
        for (const auto& link : links) {
            short client_events = 0, target_events = 0;
            if (!stalled && link.connecting) {
                target_events = POLLOUT;
            } else if (!stalled && link.target >= 0) {
                if (!link.up.source_done && link.up.has_room()) client_events |= POLLIN;
                if (!link.down.empty()) client_events |= POLLOUT;
                if (!link.down.source_done && link.down.has_room()) target_events |= POLLIN;
                if (!link.up.empty()) target_events |= POLLOUT;
            }
            // A socket with nothing to wait for is left out (fd -1): poll() would report its hang-up
            // over and over.
            waits.push_back({client_events ? link.client : -1, client_events, 0});
            waits.push_back({target_events ? link.target : -1, target_events, 0});
        }
        if (::poll(waits.data(), waits.size(), timeout) < 0) continue;  // EINTR

        if (waits[0].revents) {
            std::uint64_t count = 0;
            [[maybe_unused]] const ssize_t ignored = ::read(wake_fd_, &count, sizeof count);
        }
        for (std::size_t i = 0; i < links.size() && !stalled; ++i) {
            CutterLink& link = links[i];
            const short client_got = waits[2 + 2 * i].revents, target_got = waits[3 + 2 * i].revents;
            if (link.connecting) {
                if (!target_got) continue;
                int error = 0;
                socklen_t size = sizeof error;
                ::getsockopt(link.target, SOL_SOCKET, SO_ERROR, &error, &size);
                link.connecting = false;
                link.broken = error != 0;
                continue;
            }
            if (link.target < 0) continue;
            if ((client_got | target_got) & POLLERR) {
                link.broken = true;
                continue;
            }
            link.broken = (client_got && !cutter_fill(link.client, link.up)) ||
                          (target_got && !cutter_fill(link.target, link.down)) ||
                          !cutter_drain(link.target, link.up, to_target_) ||
                          !cutter_drain(link.client, link.down, from_target_);
        }
        if (waits[1].revents & POLLIN) {
            for (;;) {
                int client = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (client < 0) {
                    if (errno == ECONNABORTED || errno == EINTR) continue;
                    break;  // EAGAIN: all taken
                }
                bool refusing = false;
                {
                    std::lock_guard lock(mutex_);
                    refusing = Clock::now() < cut_until_;
                }
                if (refusing) {
                    cutter_reset(client);
                    continue;
                }
                cutter_no_delay(client);
                CutterLink link;
                link.client = client;
                links.push_back(std::move(link));  // connected to the target at the top of the loop
            }
        }
        drop_ended();
    }
    for (auto& link : links) {
        cutter_close(link.client);
        cutter_close(link.target);
    }
    connections_ = 0;
}

}  // namespace cspd::test
