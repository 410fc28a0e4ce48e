// How a connection spends the time it is not parsing or sending (see connection.hpp): the
// Work it takes from the loop's BlockPool and gives back when it parks, the timeouts the
// loop's tick enforces, the drain, and lingering after a final response.
#include "serving/connection.hpp"

#include "serving/block_pool.hpp"
#include "serving/loop_context.hpp"

#include <spdlog/spdlog.h>

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <new>

namespace cspd {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
// A client that stops reading our response is dropped after this.
constexpr std::uint32_t kWriteTimeoutS = 30;
// After an error response, unread input is drained this long before closing, so the
// kernel does not answer it with a reset that could destroy the response in flight.
constexpr std::uint32_t kLingerS = 2;
}  // namespace

// What an idle keep-alive connection costs, with its shared_ptr's count and its ReadWatch entry:
// bench.py measures about 350 bytes of RSS each (nginx: about 500).
static_assert(sizeof(Connection) <= 256, "a parked connection should stay this small: move what only a busy one needs into Work");

std::size_t Connection::work_bytes() {
    static_assert(alignof(Work) <= alignof(std::max_align_t), "BlockPool's blocks are aligned for this");
    static_assert(sizeof(Work) <= BlockPool::kSlabBytes / 64, "many Works to a slab");
    return sizeof(Work);
}

void Connection::ReleaseWork::operator()(Work* work) const noexcept {
    work->~Work();
    BlockPool::release(work);
}

bool Connection::ensure_work() {
    if (work_) return true;
    if (void* block = loop_.work_blocks.allocate()) {
        const ConnectionLimits& limits = loop_.limits;
        // Nothing in Work's construction allocates.
        work_.reset(new (block) Work(
            ParseLimits{limits.max_head_bytes, limits.max_body_bytes, limits.memory_body_bytes, &limits.upload_dir}));
        return true;
    }
    spdlog::error("client {}:{}: no memory for a parser; closing", address_, port_);
    close();
    return false;
}

void Connection::park() {
    // Quiet for a while: what a busy connection keeps for its requests goes back. It still
    // waits for readability as before.
    if (!idle()) return;
    release_buffer();
    work_.reset();
    state_ = State::parked;
}

void Connection::linger() {
    release_buffer();
    if (!linger_on_close_) {
        // Nothing unread is expected from the client: close at once, as nginx does.
        close();
        return;
    }
    if (::shutdown(fd_, SHUT_WR) != 0 || !ensure_registered()) {
        close();
        return;
    }
    state_ = State::lingering;
    last_write_ = loop_.now;
    socket_->async_wait(tcp::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec2) {
        if (!ec2) self->on_linger_readable();
    });
}

void Connection::on_linger_readable() {
    char discard[4096];
    for (;;) {
        ssize_t n = ::recv(fd_, discard, sizeof discard, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        close();  // EOF: the client has seen our close; or an error
        return;
    }
    socket_->async_wait(tcp::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) self->on_linger_readable();
    });
}

void Connection::on_drain() {
    // A request that has already reached the socket was sent to a server that looked open:
    // answer it (with Connection: close) rather than drop it. Only a truly idle connection closes now.
    int unread = 0;
    if (idle() && (::ioctl(fd_, FIONREAD, &unread) != 0 || unread == 0)) close();
}

void Connection::on_tick(std::uint32_t now) {
    const ConnectionLimits& config = loop_.limits;
    switch (state_) {
    case State::reading:
    case State::parked:
        if (work_ && work_->parser.in_body()) {
            if (now - last_read_ >= config.header_timeout_s) close();  // the body stalled
        } else if (mid_request()) {
            if (now - request_started_ >= config.header_timeout_s) close();  // slow headers
        } else if (now - std::max(last_request_, last_write_) >= config.keepalive_timeout_s) {
            // Idle since the last request or the end of its response, whichever came later.
            close();
        } else if (state_ == State::reading && now - last_read_ >= 2) {
            park();  // quiet for a whole second
        }
        break;
    case State::writing:
        if (now - last_write_ >= kWriteTimeoutS) close();
        break;
    case State::lingering:
        if (now - last_write_ >= kLingerS) close();
        break;
    case State::waiting:
        if (waiting_->streaming()) {
            // The head is out: no 504 any more. A stream that says nothing for so long is cut.
            if (config.pending_timeout_s > 0 && now - std::max(last_write_, waiting_since_) >= config.pending_timeout_s)
                cut_stream("stream wrote nothing within --pending-timeout", CSP_ABORT_TIMEOUT);
        } else if (waiting_->blocking()) {
            if (config.handler_timeout_s > 0 && now - waiting_since_ >= config.handler_timeout_s)
                give_up_waiting("blocking call ran longer than --handler-timeout");
        } else if (config.pending_timeout_s > 0 && now - waiting_since_ >= config.pending_timeout_s) {
            give_up_waiting("deferred reply not finished within --pending-timeout");
        }
        break;
    case State::closed: break;
    }
}

}  // namespace cspd
