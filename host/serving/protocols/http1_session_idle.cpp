// How an HTTP/1 session spends the time it is not parsing or sending (see http1_session.hpp):
// the Work it takes from the loop's BlockPool and gives back when it parks, the timeouts the
// loop's tick enforces, the drain, and lingering after a final response.
#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"

#include "http/response.hpp"
#include "serving/block_pool.hpp"
#include "serving/loop_context.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <new>

namespace cspd {
namespace {
// After an error response, unread input is drained this long before closing, so the
// kernel does not answer it with a reset that could destroy the response in flight.
constexpr std::uint32_t kLingerS = 2;
}  // namespace

// What an idle keep-alive connection costs, with its shared_ptr's count and its ReadWatch entry:
// bench.py measures about 350 bytes of RSS each (nginx: about 500). With make_shared's 16 bytes,
// 200 is the most that fits glibc's 224-byte chunk.
static_assert(sizeof(Http1Session) <= 200, "a parked connection should stay this small: move what only a busy one needs into Work");

std::size_t Http1Session::work_bytes() {
    static_assert(alignof(Work) <= alignof(std::max_align_t), "BlockPool's blocks are aligned for this");
    static_assert(sizeof(Work) <= BlockPool::kSlabBytes / 64, "many Works to a slab");
    return sizeof(Work);
}

void Http1Session::ReleaseWork::operator()(Work* work) const noexcept {
    work->~Work();
    BlockPool::release(work);
}

bool Http1Session::ensure_work() {
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

void Http1Session::park() {
    // Nothing read for a second: what a busy connection keeps for its requests goes back. It
    // still waits for readability as before.
    if (!idle()) return;
    release_buffer();
    work_.reset();
    state_ = State::parked;
}

void Http1Session::linger() {
    release_buffer();
    if (!linger_on_close_) {
        // Nothing unread is expected from the client: close at once, as nginx does.
        close();
        return;
    }
    if (!transport_.shutdown_write()) {
        close();
        return;
    }
    state_ = State::lingering;
    last_write_ = coarse_now_ms();
    if (!transport_.wait_readable(*this)) close();
}

void Http1Session::on_linger_readable() {
    // EOF: the client has seen our close; or an error. Either ends the lingering.
    if (transport_.discard_input() != Transport::Io::would_block || !transport_.wait_readable(*this)) close();
}

void Http1Session::on_drain() {
    // A request that has already reached the socket was sent to a server that looked open:
    // answer it (with Connection: close) rather than drop it. Only a truly idle connection closes now.
    if (idle() && transport_.unread_bytes() == 0) close();
}

bool Http1Session::body_too_slow(std::uint32_t now) {
    Work& work = *work_;
    const std::size_t bytes = work.parser.body_bytes();
    if (!work.body_window_open) {
        work.body_window_open = true;
        work.body_window_ms = now;
        work.body_window_bytes = bytes;
        return false;
    }
    if (!coarse_passed(now, work.body_window_ms, loop_.limits.header_timeout_s)) return false;
    const double seconds = double(now - work.body_window_ms) / 1000;
    const bool slow = double(bytes - work.body_window_bytes) < double(loop_.limits.min_body_rate) * seconds;
    work.body_window_ms = now;
    work.body_window_bytes = bytes;
    return slow;
}

void Http1Session::refuse_slow_body() {
    spdlog::info("client {}:{}: request body arriving slower than --min-body-rate {} B/s; answered 408", address_,
                 port_, loop_.limits.min_body_rate);
    const std::size_t began = loop_.output.size();
    append_error(loop_.output, HttpStatus::request_timeout, loop_.date.now(), false, false);
    if (loop_.access) log_refusal(HttpStatus::request_timeout, began);
    closing_ = true;
    linger_on_close_ = true;  // the client is still sending: a reset could destroy the 408
    send_output();  // may close, and so free, this connection: nothing follows
}

void Http1Session::on_tick(std::uint32_t now) {
    // Every timestamp is a coarse_now_ms() reading: a timeout never fires early, and at most a
    // tick late.
    const ConnectionLimits& config = loop_.limits;
    const auto passed = [now](std::uint32_t since, unsigned seconds) { return coarse_passed(now, since, seconds); };
    if (lane_ == Lane::probe_reserve && state_ != State::writing && passed(last_request_, 1)) {
        close();  // let in past --max-connections for one quick probe, not to stay
        return;
    }
    switch (state_) {
    case State::reading:
    case State::parked:
        if (transport_.handshaking()) {
            if (passed(last_request_, config.header_timeout_s)) {  // a TLS handshake that stalls
                transport_.handshake_timed_out();
                close();
            }
        } else if (work_ && work_->parser.in_body()) {
            if (passed(last_read_, config.header_timeout_s)) close();  // the body stalled
            else if (config.min_body_rate && body_too_slow(now)) refuse_slow_body();
        } else if (mid_request()) {
            if (passed(work_->request_started, config.header_timeout_s)) close();  // slow headers
        } else if (passed(coarse_later(last_request_, last_write_), config.keepalive_timeout_s)) {
            // Idle since the last request or the end of its response, whichever came later.
            close();
        } else if (state_ == State::reading && passed(last_read_, 1)) {
            park();  // nothing read for a second
        }
        break;
    case State::writing:
        if (passed(last_write_, config.send_timeout_s)) close();  // the client stopped reading
        break;
    case State::lingering:
        if (passed(last_write_, kLingerS)) close();
        break;
    case State::waiting: {
        std::uint32_t& since = work_->waiting_since;
        if (waiting_->streaming()) {
            // The head is out: no 504 any more. A stream that says nothing for so long is cut.
            // Its last sign of life is kept fresh here, so a stream may live past the stamps' wrap.
            since = coarse_later(last_write_, since);
            if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s))
                cut_stream("stream wrote nothing within --pending-timeout", CSP_ABORT_TIMEOUT);
        } else if (waiting_->blocking()) {
            if (config.handler_timeout_s > 0 && passed(since, config.handler_timeout_s))
                give_up_waiting("blocking call ran longer than --handler-timeout");
        } else if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s)) {
            give_up_waiting("deferred reply not finished within --pending-timeout");
        }
        break;
    }
    case State::closed: break;
    }
}

}  // namespace cspd
