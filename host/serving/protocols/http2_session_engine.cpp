// An HTTP/2 session's engine (see http2_session.hpp): nghttp2 set up with cspd's settings and
// limits, and its callbacks, which turn frames into streams, headers and bodies, and count.
#include "serving/protocols/http2_session.hpp"

#include "common/clocks.hpp"
#include "serving/loop_context.hpp"
#include "stats/shared_stats.hpp"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <new>

namespace cspd {
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
        try {
            auto made = std::make_unique<Http2Stream>(frame->hd.stream_id);
            Http2Stream* s = made.get();
            s->last_in = s->last_out = coarse_now_ms();
            self.streams_.emplace(s->id, std::move(made));
            nghttp2_session_set_stream_user_data(session, s->id, s);
        } catch (const std::bad_alloc&) {
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
        // nghttp2's own guards stay on behind ours (http2_session_limits.cpp), looser than they are.
        nghttp2_option_set_max_continuations(options, kMaxBlockFrames * 2);
        nghttp2_option_set_stream_reset_rate_limit(options, kResetBurst * 2, kResetsPerSecond * 2);
        nghttp2_option_set_max_outbound_ack(options, 1000);
        nghttp2_option_set_max_settings(options, 32);
        nghttp2_option_set_max_deflate_dynamic_table_size(options, 4096);
        // Windows reopen as we take bytes in (nghttp2_session_consume): a WebSocket whose client
        // does not read our frames is not read either, as over its own connection.
        nghttp2_option_set_no_auto_window_update(options, 1);
        made = nghttp2_session_server_new2(&session_, callbacks, this, options) == 0;
        if (made) {
            const nghttp2_settings_entry settings[] = {
                {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.h2_max_streams},
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

}  // namespace cspd
