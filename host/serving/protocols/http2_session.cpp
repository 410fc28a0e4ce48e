// An HTTP/2 session's bytes (see http2_session.hpp): the hand-over from HTTP/1, reads fed to
// nghttp2 and frames written out, the GOAWAY and the close. The engine's set-up and callbacks
// are http2_session_engine.cpp.
#include "serving/protocols/http2_session.hpp"

#include "common/clocks.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/lent_read.hpp"
#include "stats/shared_stats.hpp"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <new>

namespace cspd {
namespace {
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Frames are pulled from nghttp2 and written in batches of about this much.
constexpr std::size_t kWriteBatch = 64 * 1024;
}  // namespace

bool Http2Session::begins_preface(std::string_view first_bytes) {
    if (first_bytes.size() < 4) return false;
    const std::size_t n = std::min(first_bytes.size(), kPreface.size());
    return first_bytes.substr(0, n) == kPreface.substr(0, n);
}

std::shared_ptr<Http2Session> Http2Session::take_over(Connection& from, std::string_view first_bytes) {
    std::shared_ptr<Http2Session> next;
    try {
        next = std::make_shared<Http2Session>(from);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
    if (!next->set_up()) {
        next->close();
        return next;
    }
    next->start();
    if (!first_bytes.empty()) next->process(first_bytes);
    next->read_more();  // the wait holds the session from here on
    // The loop began draining before the first bytes said HTTP/2: what they asked is answered,
    // and nothing more is taken.
    if (next->loop_.draining) next->on_drain();
    return next;
}

Http2Session::Http2Session(Connection& from) noexcept
    : Connection(TakeOver{}, from), idle_frame_tokens_(kIdleFrameBurst), reset_tokens_(kResetBurst) {}

Http2Session::~Http2Session() {
    for (auto& [id, s] : streams_)
        if (s->pending) s->pending->drop(loop_.ending ? CSP_ABORT_DRAINING : CSP_ABORT_CLIENT_GONE, loop_.ending);
    if (owed_ && loop_.slot) bump(loop_.slot->replies_owed, std::uint64_t(0) - owed_);
    if (session_) nghttp2_session_del(session_);
}

void Http2Session::start() {
    last_read_ = last_write_ = last_stream_ = last_data_ = tokens_at_ = coarse_now_ms();
    if (loop_.slot) bump(loop_.slot->h2_connections);
}

void Http2Session::on_readable() {
    if (closed_) return;
    if (lingering_) {
        if (transport_.discard_input() != Transport::Io::would_block || !transport_.wait_readable(*this)) close();
        return;
    }
    read_now();
}

void Http2Session::read_now() {
    // nghttp2 keeps what it needs of the bytes: the buffer goes back at once.
    const Transport::Io io = read_lent(loop_.buffers, transport_, address_, port_, [&](char* bytes, std::size_t size) {
        last_read_ = coarse_now_ms();
        process({bytes, size});
    });
    if (closed_) return;
    if (io == Transport::Io::closed || io == Transport::Io::failed) {
        close();  // the client is gone, and every stream with it
        return;
    }
    read_more();
}

void Http2Session::read_more() {
    if (!closed_ && !writing_ && !transport_.wait_readable(*this)) close();
}

void Http2Session::process(std::string_view input) {
    const auto fed = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    if (fed < 0) {
        // nghttp2 queued its GOAWAY for a protocol error; one of our limits says why itself.
        if (fed == NGHTTP2_ERR_CALLBACK_FAILURE)
            go_away(cut_for_, cut_for_ == H2Goaway::protocol ? NGHTTP2_PROTOCOL_ERROR : NGHTTP2_ENHANCE_YOUR_CALM);
        else if (!close_when_sent_) {
            spdlog::debug("client {}:{}: HTTP/2 connection error: {}", address_, port_, nghttp2_strerror(int(fed)));
            close_when_sent_ = true;
        }
        ready_.clear();
        heard_.clear();
    }
    route_ready();
    feed_websockets();
    send_frames();
}

void Http2Session::send_frames() {
    if (closed_ || writing_) return;
    // With conversations, more follows a close below (websockets_drained): held until it is done.
    const std::shared_ptr<Connection> keep = websockets_ ? shared_from_this() : nullptr;
    std::string& out = loop_.output;
    for (;;) {
        out.clear();
        while (out.size() < kWriteBatch) {
            const std::uint8_t* data = nullptr;
            const auto n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                spdlog::debug("client {}:{}: HTTP/2: {}", address_, port_, nghttp2_strerror(int(n)));
                out.clear();
                close();
                return;
            }
            if (n == 0) break;
            out.append(reinterpret_cast<const char*>(data), std::size_t(n));
        }
        if (out.empty()) break;
        const OutputQueue::Written written = queued_.send(transport_, out);
        if (written.bytes > 0) last_write_ = coarse_now_ms();
        if (written.progress == OutputQueue::Progress::would_block) {
            out.clear();
            writing_ = true;
            if (!transport_.wait_writable(*this)) {
                close();  // may free this session: nothing follows
                return;
            }
            report_stream_room();
            return;
        }
        if (written.progress != OutputQueue::Progress::done) {
            out.clear();
            close();
            return;
        }
    }
    out.clear();
    report_stream_room();
    after_send();
    if (!closed_) websockets_drained();  // last: what they write comes back here
}

void Http2Session::on_writable() {
    if (closed_) return;
    const OutputQueue::Written written = queued_.write_to(transport_);
    if (written.bytes > 0) last_write_ = coarse_now_ms();
    if (written.progress == OutputQueue::Progress::would_block) {
        if (!transport_.wait_writable(*this)) close();
        return;
    }
    if (written.progress != OutputQueue::Progress::done) {
        close();
        return;
    }
    writing_ = false;
    send_frames();
    read_more();
}

void Http2Session::after_send() {
    if (closed_ || writing_) return;
    const bool said_all = !nghttp2_session_want_write(session_) && queued_.empty();
    if (!said_all) return;
    if (close_when_sent_ || !nghttp2_session_want_read(session_) || (going_away_ && streams_.empty())) {
        // Our last frame is out: half-close and read what the client still sends for a moment,
        // so that its unread bytes do not make the kernel answer with a reset that destroys our GOAWAY.
        if (lingering_) return;
        if (!transport_.shutdown_write()) {
            close();
            return;
        }
        lingering_ = true;
        lingering_since_ = coarse_now_ms();
        read_more();  // reading goes on for the client's EOF
    }
}

void Http2Session::go_away(H2Goaway why, std::uint32_t error) {
    if (closed_ || close_when_sent_) return;
    count_goaway(why);
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_), error,
                          nullptr, 0);
    if (why == H2Goaway::drain) {
        going_away_ = true;  // the streams it has go on
    } else {
        close_when_sent_ = true;
        spdlog::info("client {}:{}: HTTP/2 GOAWAY ({}, {})", address_, port_, kH2GoawayNames[std::size_t(why)],
                     kH2ErrorNames[std::min<std::size_t>(error, kH2ErrorCodes - 1)]);
    }
}

void Http2Session::close() {
    if (closed_) return;
    const std::shared_ptr<Connection> keep = shared_from_this();  // the loop's set may hold the last reference
    closed_ = true;
    for (auto& [id, s] : streams_) {
        if (s->websocket) s->websocket->gone();
        if (!s->pending) continue;
        if (loop_.access) log_answer(*s, nullptr, 499);
        s->pending->drop(loop_.ending ? CSP_ABORT_DRAINING : CSP_ABORT_CLIENT_GONE, loop_.ending);
        owe_nothing(*s);
    }
    transport_.close();
}

}  // namespace cspd
