// What bounds an HTTP/2 session (see http2_session.hpp): budgets for frames that do no work
// and for resets, the size of a header block's frames, the timeouts the loop's tick enforces,
// the drain, and the counters of resets and GOAWAYs.
#include "serving/protocols/http2_session.hpp"

#include "common/clocks.hpp"
#include "serving/loop_context.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cspd {
namespace {
// After our last frame, what the client still sends is read and dropped this long at most.
constexpr std::uint32_t kH2LingerS = 2;
// A connection's stalled streams are logged at most once in this many seconds, with their count
// (/metrics counts every reset): a client that stalls streams by the hundred gets no line each.
constexpr unsigned kStallLogEveryS = 60;
}  // namespace

bool Http2Session::spend_idle_frame() {
    refill_budgets();
    if (idle_frame_tokens_ < 1) {
        cut_for_ = H2Goaway::flood;
        return false;
    }
    idle_frame_tokens_ -= 1;
    return true;
}

void Http2Session::refill_budgets() {
    const std::uint32_t now = coarse_now_ms();
    const double seconds = double(now - tokens_at_) / 1000;
    tokens_at_ = now;
    idle_frame_tokens_ = std::min(kIdleFrameBurst, idle_frame_tokens_ + seconds * kIdleFramesPerSecond);
    reset_tokens_ = std::min(kResetBurst, reset_tokens_ + seconds * kResetsPerSecond);
}

bool Http2Session::spend_reset() {
    refill_budgets();
    if (reset_tokens_ < 1) {
        cut_for_ = H2Goaway::rapid_reset;
        return false;
    }
    reset_tokens_ -= 1;
    return true;
}

bool Http2Session::header_block_frame(std::size_t length, bool first) {
    if (first) block_bytes_ = block_frames_ = 0;
    block_bytes_ += length;
    ++block_frames_;
    // HPACK's Huffman code may make a field longer than it is (up to 30 bits a byte): a block's
    // frames may hold four times the header limit, and no more, before a byte is decoded.
    const std::size_t most = 4 * loop_.limits.max_head_bytes + 16 * 1024;
    if (block_bytes_ <= most && block_frames_ <= kMaxBlockFrames) return true;
    cut_for_ = H2Goaway::header_flood;
    return false;
}

bool Http2Session::may_open_or_continue(std::int32_t id) {
    // The ring holds the ids of HEADERS received (opened, refused or reset), not only of streams opened.
    const std::int32_t newest = opened_count_ ? opened_[(opened_count_ - 1) % opened_.size()] : 0;
    if (id > newest) {
        opened_[opened_count_++ % opened_.size()] = id;
        return true;  // a new stream
    }
    if (streams_.count(id)) return true;
    // Trailers may still come for a stream closed lately; an id older than the ring remembers is
    // left to nghttp2, which ignores it.
    const std::size_t remembered = std::min(opened_count_, opened_.size());
    // While the ring has not wrapped it holds every stream this connection opened.
    const std::int32_t oldest = opened_count_ <= opened_.size() ? 0 : opened_[opened_count_ % opened_.size()];
    if (id < oldest) return true;
    if (std::find(opened_.begin(), opened_.begin() + remembered, id) != opened_.begin() + remembered) return true;
    cut_for_ = H2Goaway::protocol;
    return false;
}

void Http2Session::count_goaway(H2Goaway why) {
    goaway_submitted_ = true;
    if (loop_.slot) bump(loop_.slot->h2_goaways[std::size_t(why)]);
}

void Http2Session::count_reset_sent(std::uint32_t error) {
    if (loop_.slot) bump(loop_.slot->h2_resets_sent[std::min<std::size_t>(error, kH2ErrorCodes - 1)]);
}

void Http2Session::on_tick(std::uint32_t now) {
    if (closed_) return;
    // A conversation's frames may close the session while this runs: the loop's list does not hold it.
    const std::shared_ptr<Connection> keep = websockets_ ? shared_from_this() : nullptr;
    const ConnectionLimits& config = loop_.limits;
    const auto passed = [now](std::uint32_t since, unsigned seconds) { return coarse_passed(now, since, seconds); };
    if (lingering_) {
        if (passed(lingering_since_, kH2LingerS)) close();
        return;
    }
    if (writing_) {
        if (passed(last_write_, config.send_timeout_s)) {  // the socket stayed full: nothing more can be said
            count_goaway(H2Goaway::stalled);
            spdlog::info("client {}:{}: HTTP/2 client took nothing for --send-timeout; closed", address_, port_);
            close();
        }
        return;
    }
    if (lane_ == Lane::probe_reserve && passed(last_stream_, 1)) {
        go_away(H2Goaway::idle, NGHTTP2_NO_ERROR);  // let in past --max-connections for one quick probe
        send_frames();
        return;
    }
    // Each stream is timed on its own (a live sibling keeps none alive); the connection only
    // for what is the connection's: a header block in progress, its own window, idleness.
    bool connection_window_shut = false;
    const bool connection_window_open = nghttp2_session_get_remote_window_size(session_) > 0;
    // Said once a tick for the whole connection, with the count: a client can stall many streams
    // at once, and must not get a log line for each.
    unsigned stalled_requests = 0, stalled_windows = 0;
    for (auto& [id, s] : streams_) {
        const bool data_waits = s->head_submitted && (s->sent < s->response.size() || s->file.is_open());
        if (!s->request_complete && !s->head_submitted && !s->pending && s->refused == Http2Stream::Refusal::none) {
            if (passed(s->last_in, config.header_timeout_s)) {
                reset_stalled(*s, "request stopped arriving for --header-timeout");
                ++stalled_requests;
            }
            continue;
        }
        if (data_waits && !connection_window_open) connection_window_shut = true;
        if (data_waits && connection_window_open && nghttp2_session_get_stream_remote_window_size(session_, id) <= 0 &&
            passed(s->last_out, config.send_timeout_s)) {
            reset_stalled(*s, "its flow-control window stayed shut for --send-timeout");
            ++stalled_windows;
            continue;
        }
        if (!s->pending) continue;
        std::uint32_t& since = s->waiting_since;
        if (s->pending->streaming()) {
            // The head is out: no 504 any more. A stream that says nothing for so long is reset.
            // Its last sign of life is kept fresh here, so a stream may live past the stamps' wrap.
            since = coarse_later(s->last_out, since);
            if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s))
                cut_stream(*s, "stream wrote nothing within --pending-timeout", CSP_ABORT_TIMEOUT);
        } else if (s->pending->blocking()) {
            if (config.handler_timeout_s > 0 && passed(since, config.handler_timeout_s))
                give_up_waiting(*s, "blocking call ran longer than --handler-timeout");
        } else if (config.pending_timeout_s > 0 && passed(since, config.pending_timeout_s)) {
            give_up_waiting(*s, "deferred reply not finished within --pending-timeout");
        }
    }
    stalls_unsaid_.windows += stalled_windows;
    stalls_unsaid_.requests += stalled_requests;
    if (stalled_windows + stalled_requests > 0 && (!stalls_said_ || passed(stalls_said_at_, kStallLogEveryS))) {
        spdlog::info("client {}:{}: HTTP/2: {} stalled stream(s) reset{}: {} whose flow-control window stayed shut "
                     "for --send-timeout, {} whose request stopped arriving for --header-timeout",
                     address_, port_, stalls_unsaid_.windows + stalls_unsaid_.requests,
                     stalls_said_ ? " since the last such line" : "", stalls_unsaid_.windows, stalls_unsaid_.requests);
        stalls_said_ = true;
        stalls_said_at_ = now;
        stalls_unsaid_ = {};
    }
    if (connection_window_shut && passed(last_data_, config.send_timeout_s)) {
        spdlog::info("client {}:{}: HTTP/2 connection window shut for --send-timeout; GOAWAY", address_, port_);
        go_away(H2Goaway::stalled, NGHTTP2_NO_ERROR);
    } else if (block_frames_ > 0 && passed(last_read_, config.header_timeout_s)) {
        spdlog::info("client {}:{}: HTTP/2 header block stopped arriving for --header-timeout; GOAWAY", address_, port_);
        go_away(H2Goaway::stalled, NGHTTP2_NO_ERROR);
    } else if (streams_.empty() && !going_away_ &&
               passed(coarse_later(last_stream_, last_write_), config.keepalive_timeout_s)) {
        go_away(H2Goaway::idle, NGHTTP2_NO_ERROR);
    }
    websockets_ticked(now);
    send_frames();
}

void Http2Session::reset_stalled(Http2Stream& s, const char* why) {
    if (s.websocket) {
        s.websocket->hang_up();  // resets it, and tells its handler
        return;
    }
    if (s.pending && s.pending->streaming()) {
        cut_stream(s, why, CSP_ABORT_CLIENT_GONE);  // resets it, and tells its handler
        return;
    }
    s.file = StaticFiles::File{};  // its descriptor goes now
    std::string().swap(s.response);
    s.sent = 0;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
}

void Http2Session::on_drain() {
    if (closed_ || going_away_) return;
    const std::shared_ptr<Connection> keep = shared_from_this();  // a conversation's close may close the session
    go_away(H2Goaway::drain, NGHTTP2_NO_ERROR);  // open streams finish; the connection closes after the last
    websockets_draining();
    send_frames();
}

void Http2Session::warn_draining() {
    for (auto& [id, s] : streams_)
        if (s->pending) s->pending->warn_draining();
}

}  // namespace cspd
