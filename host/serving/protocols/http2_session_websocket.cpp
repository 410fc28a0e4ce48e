// WebSockets over an HTTP/2 session's streams, RFC 8441 (see http2_session.hpp): a handler accepts
// an extended CONNECT, the stream answers 200 and carries the conversation (Http2WebSocket); the
// bytes its DATA brings are handed over once nghttp2 has taken the whole read.
#include "serving/protocols/http2_session.hpp"

#include "serving/loop_context.hpp"
#include "websocket/deflate.hpp"

#include <spdlog/spdlog.h>

#include <new>
#include <optional>

namespace cspd {

WebSocketChannel* Http2Session::accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                                 std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                                 std::string& extensions) noexcept {
    Http2Stream* s = routing_;
    if (!s || !can_carry_websocket(*s)) return nullptr;
    try {
        std::optional<std::string> deflate;
        if (loop_.limits.ws_deflate) deflate = ws::accept_deflate(request);
        s->upgrade = std::make_shared<WebSocketLink>(loop_.inbox, callbacks, std::move(version), stats, deflate.has_value());
        extensions = deflate.value_or(std::string());
    } catch (const std::bad_alloc&) {
        s->upgrade.reset();
        return nullptr;
    }
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
