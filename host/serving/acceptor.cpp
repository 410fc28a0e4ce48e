#include "serving/acceptor.hpp"

#include "common/clocks.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <system_error>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {
// Accepts per wake-up: one loop must not starve its connections while a queue fills.
constexpr int kAcceptsPerWake = 64;

bool out_of_resources(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }
}  // namespace

Acceptor::Acceptor(asio::io_context& io, std::string name, OnAccepted on_accepted)
    : acceptor_(io), retry_(io), name_(std::move(name)), on_accepted_(std::move(on_accepted)) {}

void Acceptor::adopt(int fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // a worker's inherited socket: not for what it starts in turn
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
    acceptor_.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd);
    acceptor_.non_blocking(true);
}

void Acceptor::start() {
    if (acceptor_.is_open()) wait();
}

void Acceptor::close() {
    closed_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    retry_.cancel();
}

Acceptor::Taken Acceptor::accept_one() {
    for (;;) {
        sockaddr_storage peer{};
        socklen_t length = sizeof peer;
        const int fd = ::accept4(acceptor_.native_handle(), reinterpret_cast<sockaddr*>(&peer), &length,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? Taken::none : Taken::error;
        }
        tcp::endpoint endpoint;
        std::memcpy(endpoint.data(), &peer, std::min<std::size_t>(length, endpoint.capacity()));
        endpoint.resize(length);
        on_accepted_(fd, endpoint);
        return Taken::connection;
    }
}

void Acceptor::wait() {
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted || closed_) return;
        if (ec) {
            spdlog::warn("{}: waiting for connections: {}", name_, ec.message());
            pause_after_error(0);
            return;
        }
        on_readable();
    });
}

void Acceptor::on_readable() {
    for (int batch = 0; batch < kAcceptsPerWake; ++batch) {
        const Taken taken = accept_one();
        if (taken == Taken::connection) continue;
        if (taken == Taken::none) break;
        pause_after_error(errno);
        return;
    }
    wait();
}

void Acceptor::take_backlog(unsigned limit) {
    if (!acceptor_.is_open()) return;
    for (unsigned taken = 0; taken < limit; ++taken) {
        const Taken result = accept_one();
        if (result == Taken::connection) continue;
        if (result == Taken::error)
            spdlog::warn("{}: draining: accept: {}; connections still queued are reset", name_,
                         std::system_category().message(errno));
        break;
    }
}

// Out of descriptors, UBSan's vptr check (clang's) finds no pipe to probe memory with and reports
// the error category's virtual call as a bad object: the check is left out of this function only.
__attribute__((no_sanitize("vptr"))) void Acceptor::pause_after_error(int err) {
    if (err != 0) {
        const std::int64_t now_s = coarse_monotonic_now_ns() / 1'000'000'000;
        if (!out_of_resources(err)) {
            spdlog::warn("{}: accept: {}", name_, std::system_category().message(err));
        } else if (last_error_log_s_ != now_s) {  // the socket stays readable: said once a second at most
            last_error_log_s_ = now_s;
            spdlog::error("{}: accept: {}; pausing accepts for 100 ms", name_, std::system_category().message(err));
        }
    }
    retry_.expires_after(100ms);
    retry_.async_wait([this](boost::system::error_code ec) {
        if (!ec && !closed_) wait();
    });
}

}  // namespace cspd
