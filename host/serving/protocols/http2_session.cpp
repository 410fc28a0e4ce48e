// HTTP/2 on one connection, in the order a connection meets it: its
// bytes (the hand-over from HTTP/1, reads fed to nghttp2, frames written out, the GOAWAY and the
// close); the engine (nghttp2 set up, and its callbacks); the streams (a request gathered, routed,
// answered); answers that come later; what bounds a session; WebSockets over streams (RFC 8441).
#include "serving/protocols/http2_session.hpp"

#include "common/ascii.hpp"
#include "common/clocks.hpp"
#include "http/response.hpp"
#include "limits/client_limits.hpp"
#include "serving/access_log.hpp"
#include "serving/buffer_pool.hpp"
#include "serving/exchange/answer_log.hpp"
#include "serving/exchange/pending_start.hpp"
#include "serving/loop_context.hpp"
#include "serving/protocols/lent_read.hpp"
#include "stats/shared_stats.hpp"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
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
    if (next->over_client_cap_) {  // --client-connections: refused before any stream is read
        next->go_away(H2Goaway::client_limit, NGHTTP2_REFUSED_STREAM);
        next->send_frames();
        next->read_more();
        return next;
    }
    if (!first_bytes.empty()) next->process(first_bytes);
    next->read_more();  // the wait holds the session from here on
    // The loop began draining before the first bytes said HTTP/2: what they asked is answered,
    // and nothing more is taken.
    if (next->loop_.draining) next->on_drain();
    return next;
}

Http2Session::Http2Session(Connection& from) noexcept
    : Connection(TakeOver{}, from), idle_frames_(kIdleFrameBurst, kIdleFramesPerSecond, coarse_now_ms()),
      resets_(kResetBurst, kResetsPerSecond, coarse_now_ms()) {}

Http2Session::~Http2Session() {
    for (auto& [id, s] : streams_)
        if (s->pending) s->pending->drop(loop_.ending ? CSP_ABORT_DRAINING : CSP_ABORT_CLIENT_GONE, loop_.ending);
    if (owed_ && loop_.slot) bump(loop_.slot->replies_owed, std::uint64_t(0) - owed_);
    if (session_) nghttp2_session_del(session_);
    for (; extra_units_ > 0; --extra_units_) loop_.client_limits->release(peer());
}

void Http2Session::start() {
    last_read_ = last_write_ = last_stream_ = last_data_ = coarse_now_ms();
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
        else if (fed == NGHTTP2_ERR_FLOODED)  // nghttp2's own guard, behind ours: still a GOAWAY that says why
            go_away(H2Goaway::flood, NGHTTP2_ENHANCE_YOUR_CALM);
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
        if (out.empty()) {
            // nghttp2 took what the windows allow: requests held back by the budget may fit now.
            if (held_back_next_ == held_back_.size() || !route_held_back() || closed_) break;
            continue;
        }
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
        // A client over --client-connections is counted, not logged: it may open many.
        if (why != H2Goaway::client_limit)
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

// ---- An HTTP/2 session's engine: nghttp2 set up with cspd's settings and
// limits, and its callbacks, which turn frames into streams, headers and bodies, and count.
namespace {
// A stream's window, and the connection's: what a client may send before we take it in.
constexpr std::int32_t kStreamWindow = 256 * 1024;
constexpr std::int32_t kConnectionWindow = 1024 * 1024;
}  // namespace

struct Http2Session::Callbacks {
    static Http2Session& of(void* user) { return *static_cast<Http2Session*>(user); }

    static int begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
        Http2Session& self = of(user);
        if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
            if (!self.header_block_frame(hd->length, hd->type == NGHTTP2_HEADERS)) return NGHTTP2_ERR_CALLBACK_FAILURE;
            // The block ends with this frame, whether nghttp2 then takes it or drops it.
            if (hd->flags & NGHTTP2_FLAG_END_HEADERS) self.block_bytes_ = self.block_frames_ = 0;
        }
        if (hd->type == NGHTTP2_HEADERS && !self.may_open_or_continue(hd->stream_id)) return NGHTTP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
        Http2Session& self = of(user);
        if (!self.charge_stream()) {
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
            return 0;  // no stream is made: its headers and body are dropped
        }
        try {
            std::unique_ptr<Http2Stream> made = Http2Stream::make(frame->hd.stream_id);
            Http2Stream* s = made.get();
            s->last_in = s->last_out = coarse_now_ms();
            self.streams_.emplace(s->id, std::move(made));
            nghttp2_session_set_stream_user_data(session, s->id, s);
        } catch (const std::bad_alloc&) {
            self.uncharge_stream();
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // this stream is reset, the others go on
        }
        self.last_stream_ = coarse_now_ms();
        if (self.loop_.slot) bump(self.loop_.slot->h2_streams);
        return 0;
    }

    static int header(nghttp2_session*, const nghttp2_frame* frame, nghttp2_rcbuf* name, nghttp2_rcbuf* value,
                      std::uint8_t, void* user) {
        Http2Session& self = of(user);
        Http2Stream* s = self.stream(frame->hd.stream_id);
        if (!s) return 0;
        s->last_in = coarse_now_ms();
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) self.add_header(*s, name, value);
        // Trailers are read and dropped: HTTP/1's parser drops a chunked body's trailers too.
        return 0;
    }

    static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data,
                          std::size_t length, void* user) {
        Http2Session& self = of(user);
        if (Http2Stream* s = self.stream(stream_id)) {
            s->last_in = coarse_now_ms();
            const std::string_view bytes(reinterpret_cast<const char*>(data), length);
            if (s->websocket || (!s->protocol.empty() && !s->head_submitted)) {
                // A conversation's bytes (or, before its answer, an extended CONNECT's: no body,
                // whatever it becomes) are taken for the connection at once; for the stream once
                // the conversation has them. Its stream window bounds what waits.
                nghttp2_session_consume_connection(self.session_, length);
                self.websocket_bytes(*s, bytes);
                return 0;
            }
            self.add_body(*s, bytes);
        }
        nghttp2_session_consume(self.session_, stream_id, length);  // a body is bounded by --max-body
        return 0;
    }

    static int frame_received(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        Http2Session& self = of(user);
        const bool ends_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
        switch (frame->hd.type) {
        case NGHTTP2_HEADERS: [[fallthrough]];
        case NGHTTP2_DATA:
            if (frame->hd.type == NGHTTP2_DATA && frame->hd.length == 0 && !ends_stream && !self.spend_idle_frame())
                return NGHTTP2_ERR_CALLBACK_FAILURE;
            if (ends_stream) {
                if (Http2Stream* s = self.stream(frame->hd.stream_id); s && !s->request_complete) {
                    s->request_complete = true;
                    // A WebSocket's client ended its side: heard after what it sent before.
                    if (s->websocket) {
                        if (s->body.empty()) self.heard_.push_back(s->id);
                    } else {
                        self.ready_.push_back(s->id);
                    }
                }
            } else if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
                // An extended CONNECT (RFC 8441) is routed at its HEADERS: the stream stays open.
                if (Http2Stream* s = self.stream(frame->hd.stream_id); s && !s->protocol.empty())
                    self.ready_.push_back(s->id);
            }
            break;
        case NGHTTP2_RST_STREAM:
            if (self.loop_.slot) bump(self.loop_.slot->h2_resets_received);
            if (!self.spend_reset()) return NGHTTP2_ERR_CALLBACK_FAILURE;
            break;
        case NGHTTP2_SETTINGS:
        case NGHTTP2_PING:
            if (!(frame->hd.flags & NGHTTP2_FLAG_ACK) && !self.spend_idle_frame()) return NGHTTP2_ERR_CALLBACK_FAILURE;
            break;
        case NGHTTP2_PRIORITY:
            if (!self.spend_idle_frame()) return NGHTTP2_ERR_CALLBACK_FAILURE;
            break;
        default: break;
        }
        return 0;
    }

    static int frame_sent(nghttp2_session*, const nghttp2_frame* frame, void* user) {
        Http2Session& self = of(user);
        if (frame->hd.type == NGHTTP2_RST_STREAM) {
            self.count_reset_sent(frame->rst_stream.error_code);
            // nghttp2 refused a malformed request (RFC 9113 §8.1.1: bad or uppercase field names,
            // bad pseudo-headers, a body unlike its content-length) before it was routed: logged
            // as the 400 an HTTP/1 server would have answered.
            if (frame->rst_stream.error_code == NGHTTP2_PROTOCOL_ERROR)
                if (Http2Stream* s = self.stream(frame->hd.stream_id);
                    s && !s->head_submitted && !s->pending && !s->request_complete)
                    self.log_malformed(*s);
        }
        if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
            (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
            if (Http2Stream* s = self.stream(frame->hd.stream_id); s && s->reset_when_answered && !s->request_complete)
                nghttp2_submit_rst_stream(self.session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
        }
        if (frame->hd.type == NGHTTP2_DATA) self.last_data_ = coarse_now_ms();
        if (frame->hd.type == NGHTTP2_GOAWAY && !self.goaway_submitted_) {
            // One nghttp2 sent on its own: the client broke the protocol.
            self.count_goaway(H2Goaway::protocol);
        }
        return 0;
    }

    static int stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code, void* user) {
        of(user).stream_closed(stream_id, error_code);
        return 0;
    }

    static int error(nghttp2_session*, int, const char* message, std::size_t length, void* user) {
        Http2Session& self = of(user);
        spdlog::debug("client {}:{}: HTTP/2: {}", self.address_, self.port_, std::string_view(message, length));
        return 0;
    }
};

bool Http2Session::set_up() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_option* options = nullptr;
    if (nghttp2_session_callbacks_new(&callbacks) != 0) return false;
    nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, Callbacks::begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, Callbacks::begin_headers);
    nghttp2_session_callbacks_set_on_header_callback2(callbacks, Callbacks::header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Callbacks::data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Callbacks::frame_received);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, Callbacks::frame_sent);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Callbacks::stream_close);
    nghttp2_session_callbacks_set_error_callback2(callbacks, Callbacks::error);
    bool made = false;
    if (nghttp2_option_new(&options) == 0) {
        const ConnectionLimits& limits = loop_.limits;
        // nghttp2's own guards stay on behind ours (spend_idle_frame, spend_reset), looser than they are.
        nghttp2_option_set_max_continuations(options, kMaxBlockFrames * 2);
        nghttp2_option_set_stream_reset_rate_limit(options, kResetBurst * 2, kResetsPerSecond * 2);
        nghttp2_option_set_max_outbound_ack(options, static_cast<std::size_t>(kIdleFrameBurst) * 2);
        nghttp2_option_set_max_settings(options, 32);
        nghttp2_option_set_max_deflate_dynamic_table_size(options, 4096);
        // Windows reopen as we take bytes in (nghttp2_session_consume): a WebSocket whose client
        // does not read our frames is not read either, as over its own connection.
        nghttp2_option_set_no_auto_window_update(options, 1);
        made = nghttp2_session_server_new2(&session_, callbacks, this, options) == 0;
        if (made) {
            const nghttp2_settings_entry settings[] = {
                {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.http2.max_streams},
                {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
                {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits.max_head_bytes)},
                {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},  // WebSockets over streams (RFC 8441)
            };
            made = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) == 0 &&
                   nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow) == 0;
        }
        nghttp2_option_del(options);
    }
    nghttp2_session_callbacks_del(callbacks);
    if (!made) spdlog::error("client {}:{}: no memory for an HTTP/2 session; closing", address_, port_);
    return made;
}

// ---- An HTTP/2 session's streams: a request gathered from HEADERS and
// DATA, routed like HTTP/1's, and its typed answer written as HEADERS and DATA frames.
namespace {
std::string_view view_of(nghttp2_rcbuf* buffer) {
    const nghttp2_vec bytes = nghttp2_rcbuf_get_buf(buffer);
    return {reinterpret_cast<const char*>(bytes.base), bytes.len};
}

nghttp2_nv field(std::string_view name, std::string_view value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP2_NV_FLAG_NONE};
}
}  // namespace

Http2Stream* Http2Session::stream(std::int32_t id) {
    // A header block's fields, one callback each, ask for the same stream again and again.
    if (looked_up_ && looked_up_->id == id) return looked_up_;
    const auto found = streams_.find(id);
    if (found == streams_.end()) return nullptr;
    looked_up_ = found->second.get();
    return looked_up_;
}

Http2Stream* Http2Session::stream_of(const PendingExchange& pending) {
    for (auto& [id, s] : streams_)
        if (s->pending.get() == &pending) return s.get();
    return nullptr;
}

void Http2Session::add_header(Http2Stream& s, nghttp2_rcbuf* name_buffer, nghttp2_rcbuf* value_buffer) {
    const std::string_view name = view_of(name_buffer), value = view_of(value_buffer);
    // As HTTP/1 counts a field: "name: value\r\n". An HPACK bomb (a large field sent again and
    // again by its index) is counted as it decodes, and held by reference, never copied.
    s.header_bytes += name.size() + value.size() + 4;
    if (s.header_bytes > loop_.limits.max_head_bytes && s.refused == Http2Stream::Refusal::none)
        s.refused = Http2Stream::Refusal::head_too_large;
    if (s.refused != Http2Stream::Refusal::none) return;
    try {
        // Room for both before either is held (no push_back may throw after an incref), grown
        // geometrically: a request's fields are about a dozen.
        if (s.names_and_values.capacity() < s.names_and_values.size() + 2)
            s.names_and_values.reserve(std::max<std::size_t>(16, 2 * s.names_and_values.capacity()));
        if (name.starts_with(':')) {
            // nghttp2 has checked them (RFC 9113 §8.3: known, once each, before the regular fields).
            if (name == ":method") s.method = value;
            else if (name == ":path") s.path = value;
            else if (name == ":authority") s.authority = value;
            else if (name == ":scheme") s.scheme = value;
            else if (name == ":protocol") s.protocol = value;
        } else {
            if (name == "cookie") ++s.cookie_fields;
            if (s.headers.empty()) s.headers.reserve(8);  // one allocation for most requests' fields
            s.headers.push_back({name, value});
        }
        nghttp2_rcbuf_incref(name_buffer);
        nghttp2_rcbuf_incref(value_buffer);
        s.names_and_values.push_back(name_buffer);
        s.names_and_values.push_back(value_buffer);
    } catch (const std::bad_alloc&) {
        s.refused = Http2Stream::Refusal::head_too_large;
    }
}

void Http2Session::add_body(Http2Stream& s, std::string_view bytes) {
    if (s.refused != Http2Stream::Refusal::none || s.head_submitted) return;  // answered already: dropped
    const ConnectionLimits& limits = loop_.limits;
    const std::size_t so_far = s.body_size();
    const auto refuse_now = [&](Http2Stream::Refusal why) {
        s.refused = why;
        s.spill.reset();
        std::string().swap(s.body);
        ready_.push_back(s.id);  // answered before the rest of the body comes
    };
    if (so_far + bytes.size() > limits.max_body_bytes) return refuse_now(Http2Stream::Refusal::body_too_large);
    std::string why;
    if (!s.spill && limits.memory_body_bytes && so_far + bytes.size() > limits.memory_body_bytes) {
        bool no_room = false;
        s.spill = SpilledBody::create(limits.upload_dir.empty() ? std::filesystem::temp_directory_path() : limits.upload_dir,
                                      so_far + bytes.size(), why, no_room);
        if (!s.spill || !s.spill->append(s.body, why)) {
            spdlog::warn("client {}:{}: stream {}: {}", address_, port_, s.id, why);
            return refuse_now(no_room ? Http2Stream::Refusal::no_room : Http2Stream::Refusal::spill_failed);
        }
        std::string().swap(s.body);
    }
    if (s.spill) {
        if (!s.spill->append(bytes, why)) {
            spdlog::warn("client {}:{}: stream {}: {}", address_, port_, s.id, why);
            refuse_now(s.spill->over_share() ? Http2Stream::Refusal::no_room : Http2Stream::Refusal::spill_failed);
        }
        return;
    }
    try {
        s.body.append(bytes);
    } catch (const std::bad_alloc&) {
        refuse_now(Http2Stream::Refusal::spill_failed);
    }
}

void Http2Session::route_ready() {
    if (ready_.empty()) return;
    std::size_t held = answer_bytes_held();
    // By index: a route may not add to ready_, but it keeps its capacity for the next read.
    for (std::size_t i = 0; i < ready_.size() && !closed_; ++i) {
        const std::int32_t id = ready_[i];
        Http2Stream* s = stream(id);
        if (!s || s->head_submitted || s->pending) continue;  // reset meanwhile, or answered already
        if (s->refused != Http2Stream::Refusal::none) {
            refuse(*s);
        } else if (s->protocol.empty() && (held_back_next_ < held_back_.size() || held >= loop_.limits.http2.answer_budget)) {
            // Behind those waiting already: answered in the order asked. Ids of streams reset
            // meanwhile are dropped now and then, so the list stays within twice the streams open.
            if (held_back_.size() >= 2 * std::size_t(loop_.limits.http2.max_streams)) {
                held_back_.erase(held_back_.begin(), held_back_.begin() + std::ptrdiff_t(held_back_next_));
                held_back_next_ = 0;
                std::erase_if(held_back_, [this](std::int32_t waiting) { return !stream(waiting); });
            }
            held_back_.push_back(id);
        } else {
            route(*s);
            if ((s = stream(id))) held += s->unsent();  // a WebSocket's route may close it
        }
    }
    ready_.clear();
}

bool Http2Session::route_held_back() {
    bool routed = false;
    std::size_t held = answer_bytes_held();
    while (held_back_next_ < held_back_.size() && held < loop_.limits.http2.answer_budget && !closed_) {
        const std::int32_t id = held_back_[held_back_next_++];
        if (held_back_next_ == held_back_.size()) {
            held_back_.clear();  // all taken: the next wait begins at the front again
            held_back_next_ = 0;
        }
        Http2Stream* s = stream(id);
        if (!s || s->head_submitted || s->pending) continue;  // reset by the client while it waited
        route(*s);
        routed = true;
        if ((s = stream(id))) held += s->unsent();
    }
    return routed;
}

std::size_t Http2Session::answer_bytes_held() const {
    std::size_t held = 0;
    for (const auto& [id, s] : streams_) held += s->unsent();
    return held;
}

void Http2Session::route(Http2Stream& s) {
    if (s.cookie_fields > 1) {
        // RFC 9113 §8.2.3: a client may split the cookie field; the routes see one, as HTTP/1 sends it.
        for (const HttpHeader& header : s.headers) {
            if (header.name != "cookie") continue;
            if (!s.cookie.empty()) s.cookie.append("; ");
            s.cookie.append(header.value);
        }
        std::erase_if(s.headers, [](const HttpHeader& header) { return header.name == "cookie"; });
        s.headers.push_back({"cookie", s.cookie});
    }
    HttpRequest request;
    // :authority stands for Host (RFC 9113 §8.3.1), and a Host field that names another entity
    // makes the request malformed: a handler that reads Host would trust what no proxy checked.
    const auto host = std::find_if(s.headers.begin(), s.headers.end(),
                                   [](const HttpHeader& header) { return header.name == "host"; });
    if (host != s.headers.end() && !s.authority.empty() && !iequals(host->value, s.authority)) {
        spdlog::debug("client {}:{}: stream {}: Host {} differs from :authority {}; reset as malformed", address_,
                      port_, s.id, host->value, s.authority);
        log_malformed(s);
        s.head_submitted = true;  // nothing more is sent on it
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_PROTOCOL_ERROR);
        return;
    }
    if (host == s.headers.end() && !s.authority.empty()) s.headers.push_back({"host", s.authority});
    request.method = s.method;
    request.target = s.path;
    request.headers = s.headers;
    if (s.spill) {
        std::string why;
        if (!s.spill->finish(why)) {
            spdlog::error("client {}:{}: stream {}: {}", address_, port_, s.id, why);
            s.refused = Http2Stream::Refusal::spill_failed;
            refuse(s);
            return;
        }
        request.body = s.spill->view();
        request.body_owner = s.spill;
    } else {
        request.body = s.body;
    }
    request.protocol = s.protocol;
    request.http_major = 2;
    request.http_minor = 0;
    request.head = s.method == "HEAD";
    s.head_request = request.head;
    // An extended CONNECT is routed before its stream ends: answered otherwise than by a WebSocket,
    // the client is asked (without an error) to stop sending on it.
    if (!s.request_complete) s.reset_when_answered = true;

    const RequestContext context{client(), true, this};
    s.began_ns = loop_.access ? monotonic_now_ns() : 0;
    routing_ = &s;
    StreamSink sink(*this, s);
    Routed routed = loop_.router.respond(request, context, sink);
    routing_ = nullptr;
    if (routed.pending) {
        s.waiting_since = coarse_now_ms();
        if (s.pending) s.pending->access.began_ns = s.began_ns;
        return;
    }
    if (loop_.access) log_answer(s, &routed, code(routed.status));
    if (s.upgrade) {
        start_websocket(s);  // last: the conversation may close `s`
        return;
    }
    if (routed.body_file.is_open() && !s.head_request) s.file = std::move(routed.body_file);
    submit(s);
}

void Http2Session::refuse(Http2Stream& s) {
    HttpStatus status = HttpStatus::header_fields_too_large;
    switch (s.refused) {
    case Http2Stream::Refusal::body_too_large: status = HttpStatus::content_too_large; break;
    case Http2Stream::Refusal::spill_failed: status = HttpStatus::service_unavailable; break;
    case Http2Stream::Refusal::no_room: status = HttpStatus::insufficient_storage; break;
    default: break;
    }
    take_answer(s, error_response(status), ResponseFrame{.head_only = s.method == "HEAD"});
    if (loop_.slot) loop_.router.count_response(status);
    if (loop_.access) {
        AnswerFacts facts;
        facts.status = code(status);
        facts.count_parts(head_.bytes(), s.response.size());
        log_unrouted(s, facts);
    }
    submit(s);
    // RFC 9113 §8.1: the answer came before the whole request; the client is asked, without an
    // error, to stop sending it (after the answer: nghttp2 sends RST_STREAM as soon as it is queued).
    if (!s.request_complete) s.reset_when_answered = true;
}

void Http2Session::log_malformed(const Http2Stream& s) {
    if (loop_.slot) loop_.router.count_response(HttpStatus::bad_request);
    if (!loop_.access) return;
    AnswerFacts facts;
    facts.status = code(HttpStatus::bad_request);
    log_unrouted(s, facts);
}

void Http2Session::log_unrouted(const Http2Stream& s, const AnswerFacts& facts) {
    const HttpRequest request = s.logged_request();
    loop_.access->add(client(), &request, facts);
}

void Http2Session::take_answer(Http2Stream& s, const Response& response, const ResponseFrame& frame) {
    head_.build(response, loop_.date.now());
    head_for_ = &s;
    head_status_ = response.status;
    s.sent = 0;
    if (response.body_kind == BodyKind::bytes && response.sends_body() && !frame.head_only)
        s.response.assign(response.body);
    else
        s.response.clear();
}

void Http2Session::submit(Http2Stream& s) {
    if (head_for_ != &s) {
        spdlog::error("client {}:{}: stream {}: an answer without a head; stream reset", address_, port_, s.id);
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
        s.head_submitted = true;
        return;
    }
    head_for_ = nullptr;
    if (!s.protocol.empty() && !s.websocket && code(head_status_) / 100 == 2) {
        // A 2xx to a CONNECT opens its tunnel (RFC 9110 §9.3.6, RFC 8441 §5): a route that did not
        // accept the WebSocket must not say so.
        spdlog::warn("client {}:{}: stream {}: {} answered a WebSocket's extended CONNECT with {} without accepting "
                     "it; 501 sent instead",
                     address_, port_, s.id, s.path, code(head_status_));
        take_answer(s, error_response(HttpStatus::not_implemented), ResponseFrame{});
        head_for_ = nullptr;
    }
    nv_.clear();
    for (const ResponseField& f : head_.fields()) nv_.push_back(field(f.name, f.value));
    const bool has_body = !s.head_request && (s.sent < s.response.size() || s.file.is_open() ||
                                              (s.pending && !s.stream_ended) || s.websocket);
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* into, std::size_t room,
                                std::uint32_t* flags, nghttp2_data_source* source, void* user) -> ssize_t {
        return static_cast<Http2Session*>(user)->read_body(*static_cast<Http2Stream*>(source->ptr), into, room, *flags);
    };
    const int rv = nghttp2_submit_response(session_, s.id, nv_.data(), nv_.size(), has_body ? &provider : nullptr);
    s.head_submitted = true;
    s.last_out = coarse_now_ms();
    if (rv != 0) {
        spdlog::error("client {}:{}: stream {}: {}", address_, port_, s.id, nghttp2_strerror(rv));
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
    }
    if (!has_body) std::string().swap(s.response);
}

long Http2Session::read_body(Http2Stream& s, std::uint8_t* into, std::size_t room, std::uint32_t& flags) {
    std::size_t n = 0;
    if (s.sent < s.response.size()) {
        n = std::min(room, s.response.size() - s.sent);
        std::memcpy(into, s.response.data() + s.sent, n);
        s.sent += n;
        if (s.sent == s.response.size()) {
            std::string().swap(s.response);  // sent: a long stream holds only what waits
            s.sent = 0;
        }
    } else if (s.file.is_open()) {
        const std::size_t want = std::min(room, s.file.size - s.file_sent);
        ssize_t got;
        do {
            got = ::pread(s.file.fd.get(), into, want, static_cast<off_t>(s.file.offset + s.file_sent));
        } while (got < 0 && errno == EINTR);
        if (got <= 0) {
            spdlog::warn("client {}:{}: stream {}: static file shrank or failed while being sent; stream reset",
                         address_, port_, s.id);
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        n = static_cast<std::size_t>(got);
        s.file_sent += n;
        if (s.file_sent == s.file.size) s.file = StaticFiles::File{};
    }
    if (n > 0) {
        s.last_out = coarse_now_ms();
        if (s.websocket && loop_.slot) bump(loop_.slot->ws_bytes_out, n);
    }
    const bool more = s.sent < s.response.size() || s.file.is_open() || (s.pending && !s.stream_ended) ||
                      (s.websocket && !s.websocket->ending());
    if (!more) {
        flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (n == 0) {
        s.data_deferred = true;  // a stream's next bytes resume it
        return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<long>(n);
}

void Http2Session::stream_closed(std::int32_t id, std::uint32_t) {
    const auto found = streams_.find(id);
    if (found == streams_.end()) return;
    Http2Stream& s = *found->second;
    if (s.websocket) --websockets_;  // its conversation hears the end as the stream goes
    if (s.pending) {
        if (loop_.access) log_answer(s, nullptr, 499);  // nginx's: the client left before its answer
        s.pending->drop(CSP_ABORT_CLIENT_GONE);
        owe_nothing(s);
    }
    if (looked_up_ == found->second.get()) looked_up_ = nullptr;
    std::unique_ptr<Http2Stream> gone = std::move(found->second);
    streams_.erase(found);
    Http2Stream::let_go(std::move(gone));
    last_stream_ = coarse_now_ms();
    uncharge_stream();
}

void Http2Session::uncharge_stream() {
    // --client-connections: the connection's own unit covers one stream, each other holds one.
    if (extra_units_ > 0 && extra_units_ + 1 > std::max<std::size_t>(streams_.size(), 1)) {
        --extra_units_;
        loop_.client_limits->release(peer());
    }
}

bool Http2Session::charge_stream() {
    if (streams_.empty() || !holds_client_unit_) return true;  // the connection's unit covers the first
    bool held = false;
    if (!loop_.client_limits->hold(peer(), held)) return false;
    if (held) ++extra_units_;
    return true;
}

// ---- How an HTTP/2 session waits for answers that come later: each stream
// whose handler deferred, runs blocking or streams has its own PendingExchange, and its
// siblings go on meanwhile. A streamed answer's bytes join its stream's DATA under that
// stream's window; what waits here counts toward the handler's back-pressure. Also: the
// access log lines of its streams.
std::shared_ptr<PendingExchange::Waiter> Http2Session::as_waiter() {
    // The base is private: only this class may hand itself out as a waiter (aliasing: same owner).
    return std::shared_ptr<PendingExchange::Waiter>(shared_from_this(), static_cast<PendingExchange::Waiter*>(this));
}

PendingReply* Http2Session::adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    if (!routing_) return nullptr;
    std::shared_ptr<PendingExchange> pending = defer_call(loop_, call, frame, as_waiter());
    if (!pending) return nullptr;
    PendingReply* reply = pending.get();
    owe(*routing_, std::move(pending));
    return reply;
}

bool Http2Session::run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept {
    if (!routing_) return false;
    std::shared_ptr<PendingExchange> pending =
        queue_blocking_call(loop_, call, frame, as_waiter(), can_carry_websocket(*routing_));
    if (!pending) return false;
    owe(*routing_, std::move(pending));
    return true;
}

void Http2Session::owe(Http2Stream& s, std::shared_ptr<PendingExchange> pending) {
    s.pending = std::move(pending);
    ++owed_;
    if (loop_.slot) bump(loop_.slot->replies_owed);
}

void Http2Session::owe_nothing(Http2Stream& s) {
    if (!s.pending) return;
    s.pending.reset();
    --owed_;
    if (loop_.slot) bump(loop_.slot->replies_owed, std::uint64_t(-1));  // one writer: the loop
}

void Http2Session::answered(PendingExchange& pending, std::optional<int> returned) {
    Http2Stream* s = closed_ ? nullptr : stream_of(pending);
    if (!s) return;
    if (pending.streaming()) {
        const bool clean = returned && *returned < 400;
        std::string rest = pending.stream().take();
        s->stream_ended = true;
        more_stream_bytes(*s, pending, std::move(rest));  // counted for the log before the line
        pending.count_stream(loop_.router);
        if (loop_.access) log_answer(*s, nullptr, pending.stream_status());
        owe_nothing(*s);
        if (!clean) {
            // Cut short: the client learns the body is incomplete from the reset (HTTP/1: the close).
            spdlog::info("stream {} to {}:{} cut short by its handler", s->id, address_, port_);
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        }
        send_frames();
        return;
    }
    std::shared_ptr<WebSocketLink> link = pending.take_websocket();
    if (link && close_when_sent_) {
        // The connection closes once what is queued is out: nothing could carry the conversation.
        link->never_carried(loop_.slot);
        owe_nothing(*s);
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
        s->head_submitted = true;
        send_frames();
        return;
    }
    StreamSink sink(*this, *s);
    const CallStatus status = link ? pending.send_websocket_accept(returned, loop_.router, sink)
                                   : pending.send_answer(returned, pending.frame(), loop_.router, sink);
    if (loop_.access) {
        pending.access.count_parts(head_.bytes(), s->response.size());
        log_answer(*s, nullptr, code(status.sent));
    }
    owe_nothing(*s);
    if (link) {
        // A blocking handler's call accepted it: the stream carries the conversation from here on,
        // what the client sent meanwhile first.
        s->upgrade = std::move(link);
        start_websocket(*s);
    } else {
        submit(*s);
    }
    send_frames();
}

StreamOutbox::Framing Http2Session::stream_framing(const ResponseFrame& frame) const {
    return frame.head_only ? StreamOutbox::Framing::none : StreamOutbox::Framing::raw;
}

void Http2Session::stream_output(PendingExchange& pending) {
    Http2Stream* s = closed_ ? nullptr : stream_of(pending);
    if (!s) return;
    if (pending.cut()) {
        cut_stream(*s, "the handler ignored back-pressure", CSP_ABORT_CLIENT_GONE);
        send_frames();
        return;
    }
    std::string bytes = pending.stream().take();
    if (bytes.empty() && s->head_submitted) return;
    if (pending.frame().head_only) {
        // A HEAD request's stream is its head: the exchange is over once that is out.
        s->stream_ended = true;
        pending.count_stream(loop_.router);
        const std::shared_ptr<const HandlerVersion>& version = pending.call().version;
        more_stream_bytes(*s, pending, std::move(bytes));  // counted for the log before the line
        if (loop_.access) log_answer(*s, nullptr, pending.stream_status());
        s->pending->drop(version && version->minor() >= 3 ? CSP_ABORT_NO_BODY : CSP_ABORT_CLIENT_GONE);
        owe_nothing(*s);
        send_frames();
        return;
    }
    more_stream_bytes(*s, pending, std::move(bytes));
    send_frames();
}

void Http2Session::more_stream_bytes(Http2Stream& s, PendingExchange& pending, std::string&& bytes) {
    if (!s.head_submitted) {
        const std::optional<Response> head = pending.take_stream_head();
        if (!head) return;  // taken already: its submit reset the stream
        take_answer(s, *head, pending.frame());
        pending.access.count_parts(head_.bytes(), bytes.size());
        s.response = std::move(bytes);  // what the handler wrote before streaming, and since
        submit(s);
        return;
    }
    pending.access.count_parts(0, bytes.size());
    s.append_output(std::move(bytes));
    if (s.data_deferred) {
        s.data_deferred = false;
        nghttp2_session_resume_data(session_, s.id);
    }
}

void Http2Session::report_stream_room() {
    if (owed_ == 0) return;
    for (auto& [id, s] : streams_) {
        if (!s->pending || !s->pending->streaming()) continue;
        // What waits for this stream's window, and what the socket has not taken of anything.
        s->pending->stream_room(s->response.size() - s->sent + queued_.size());
        if (closed_) return;
    }
}

void Http2Session::give_up_waiting(Http2Stream& s, const char* why) {
    const std::shared_ptr<const HandlerVersion> version = s.pending->call().version;
    spdlog::warn("handler {}: {}; client {}:{} stream {} answered 504", version ? version->describe() : "?", why,
                 address_, port_, s.id);
    StreamSink sink(*this, s);
    s.pending->send_timeout(loop_.router, sink);
    if (loop_.access) {
        s.pending->access.count_parts(head_.bytes(), s.response.size());
        log_answer(s, nullptr, 504);
    }
    owe_nothing(s);
    submit(s);
}

void Http2Session::cut_stream(Http2Stream& s, const char* why, int reason) {
    const std::shared_ptr<const HandlerVersion> version = s.pending->call().version;
    spdlog::warn("handler {}: {}; stream {} to {}:{} reset", version ? version->describe() : "?", why, s.id, address_,
                 port_);
    if (loop_.access) log_answer(s, nullptr, s.pending->stream_status());
    s.pending->drop(reason);
    owe_nothing(s);
    s.stream_ended = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
}

void Http2Session::log_answer(Http2Stream& s, const Routed* routed, int status) {
    if (routed) {
        AnswerFacts facts;
        facts.count_parts(head_.bytes(), s.response.size());
        if (routed->body_file.is_open() && !s.head_request) facts.count_parts(0, routed->body_file.size);
        facts.began_ns = s.began_ns;
        log_routed_answer(loop_, client(), s.logged_request(), *routed, facts);
        return;
    }
    if (s.pending) log_pending_answer(loop_, client(), *s.pending, status);
}

// ---- What bounds an HTTP/2 session: budgets for frames that do no work
// and for resets, the size of a header block's frames, the timeouts the loop's tick enforces,
// the drain, and the counters of resets and GOAWAYs.
namespace {
// After our last frame, what the client still sends is read and dropped this long at most.
constexpr std::uint32_t kH2LingerS = 2;
// A connection's stalled streams are logged at most once in this many seconds, with their count
// (/metrics counts every reset): a client that stalls streams by the hundred gets no line each.
constexpr unsigned kStallLogEveryS = 60;
}  // namespace

bool Http2Session::spend_idle_frame() {
    if (idle_frames_.take(coarse_now_ms())) return true;
    cut_for_ = H2Goaway::flood;
    return false;
}

bool Http2Session::spend_reset() {
    if (resets_.take(coarse_now_ms())) return true;
    cut_for_ = H2Goaway::rapid_reset;
    return false;
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

// ---- WebSockets over an HTTP/2 session's streams, RFC 8441: a handler accepts
// an extended CONNECT, the stream answers 200 and carries the conversation (Http2WebSocket); the
// bytes its DATA brings are handed over once nghttp2 has taken the whole read.
WebSocketChannel* Http2Session::accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                                 std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                                 std::string& extensions) noexcept {
    Http2Stream* s = routing_;
    if (!s || !can_carry_websocket(*s)) return nullptr;
    s->upgrade = WebSocketLink::accept(request, loop_.limits.websocket.deflate, loop_.inbox, callbacks,
                                       std::move(version), stats, extensions);
    return s->upgrade.get();
}

bool Http2Session::can_carry_websocket(const Http2Stream& s) const {
    // A connection let in past --max-connections for a probe serves quick requests only.
    return !s.upgrade && !s.protocol.empty() && !loop_.draining && !going_away_ && !close_when_sent_ &&
           lane_ != Lane::probe_reserve;
}

void Http2Session::start_websocket(Http2Stream& s) {
    std::shared_ptr<WebSocketLink> link = std::move(s.upgrade);
    try {
        auto websocket = std::make_unique<Http2WebSocket>(*this, s);
        websocket->attach(link);
        s.websocket = std::move(websocket);
    } catch (const std::bad_alloc&) {
        spdlog::error("client {}:{}: stream {}: no memory for a WebSocket; stream reset", address_, port_, s.id);
        link->never_carried(loop_.slot);  // on_close 1006; its topics left
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
        s.head_submitted = true;
        return;
    }
    ++websockets_;
    submit(s);  // the 200; its DATA is the conversation's from here on
    s.reset_when_answered = true;  // once our END_STREAM is out, the client's side is reset if still open
    std::string first;
    first.swap(s.body);  // frames that came with the HEADERS (their window is taken now)
    if (!first.empty()) nghttp2_session_consume_stream(session_, s.id, first.size());
    Http2WebSocket& websocket = *s.websocket;  // `s` may be closed by what the conversation sends
    websocket.begin(first);
}

void Http2Session::websocket_bytes(Http2Stream& s, std::string_view bytes) {
    if (s.body.empty() && s.websocket) heard_.push_back(s.id);
    try {
        s.body.append(bytes);  // a read's worth at most: handed over when nghttp2 returns
    } catch (const std::bad_alloc&) {
        spdlog::error("client {}:{}: stream {}: no memory for WebSocket bytes; stream reset", address_, port_, s.id);
        if (s.websocket) s.websocket->hang_up();
        else nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
    }
}

void Http2Session::feed_websockets() {
    for (std::size_t i = 0; i < heard_.size() && !closed_; ++i)
        if (Http2Stream* s = stream(heard_[i]); s && s->websocket) feed_websocket(*s);
    heard_.clear();
}

void Http2Session::feed_websocket(Http2Stream& s) {
    // While our frames wait for the client's window, its bytes wait too: unconsumed, they hold its
    // window for the stream shut (what a connection of its own does by not reading).
    if (s.response.size() - s.sent > kWebSocketReadMark) return;
    const std::int32_t id = s.id;
    if (!s.body.empty()) {
        std::string bytes;
        bytes.swap(s.body);
        nghttp2_session_consume_stream(session_, id, bytes.size());
        s.websocket->read(bytes);
    }
    Http2Stream* still = stream(id);
    if (still && still->websocket && still->request_complete && still->body.empty() && !still->end_heard) {
        still->end_heard = true;
        still->websocket->peer_ended();
    }
}

template <class Act>
void Http2Session::for_each_websocket(Act act) {
    if (websockets_ == 0) return;
    // The list is borrowed from websocket_ids_ (no allocation per write): what `act` does may
    // come back here, and then finds it taken and makes its own.
    std::vector<std::int32_t> ids = std::move(websocket_ids_);
    ids.clear();
    for (auto& [id, s] : streams_)
        if (s->websocket) ids.push_back(id);
    for (const std::int32_t id : ids) {
        if (closed_) break;
        if (Http2Stream* s = stream(id); s && s->websocket) act(*s);
    }
    websocket_ids_ = std::move(ids);
}

void Http2Session::websockets_ticked(std::uint32_t now) {
    for_each_websocket([now](Http2Stream& s) { s.websocket->tick(now); });
}

void Http2Session::websockets_drained() {
    if (!queued_.empty()) return;  // the socket holds some still
    for_each_websocket([this](Http2Stream& s) {
        const std::int32_t id = s.id;
        if (!s.body.empty() || (s.request_complete && !s.end_heard)) feed_websocket(s);  // held while output waited
        Http2Stream* still = stream(id);
        if (still && still->websocket && still->sent == still->response.size()) still->websocket->drained();
    });
}

void Http2Session::websockets_draining() {
    for_each_websocket([](Http2Stream& s) { s.websocket->drain(); });
}

}  // namespace cspd
