// An HTTP/2 session's streams (see http2_session.hpp): a request gathered from HEADERS and
// DATA, routed like HTTP/1's, and its answer read back from HTTP/1's format into HEADERS and
// DATA frames.
#include "serving/protocols/http2_session.hpp"

#include "common/ascii.hpp"
#include "common/clocks.hpp"
#include "http/response.hpp"
#include "serving/access_log.hpp"
#include "serving/loop_context.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace cspd {
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
    const auto found = streams_.find(id);
    return found == streams_.end() ? nullptr : found->second.get();
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
        s.names_and_values.reserve(s.names_and_values.size() + 2);
        if (name.starts_with(':')) {
            // nghttp2 has checked them (RFC 9113 §8.3: known, once each, before the regular fields).
            if (name == ":method") s.method = value;
            else if (name == ":path") s.path = value;
            else if (name == ":authority") s.authority = value;
            else if (name == ":scheme") s.scheme = value;
            else if (name == ":protocol") s.protocol = value;
        } else {
            if (name == "cookie") ++s.cookie_fields;
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
    // By index: a route may not add to ready_, but it keeps its capacity for the next read.
    for (std::size_t i = 0; i < ready_.size() && !closed_; ++i) {
        Http2Stream* s = stream(ready_[i]);
        if (!s || s->head_submitted || s->pending) continue;  // reset meanwhile, or answered already
        if (s->refused != Http2Stream::Refusal::none) refuse(*s);
        else route(*s);
    }
    ready_.clear();
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
    Routed routed = loop_.router.respond(request, context, s.response);
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
    s.response.clear();
    append_error(s.response, status, loop_.date.now(), true, false, s.method == "HEAD");
    if (loop_.slot) loop_.router.count_response(status);
    if (loop_.access) {
        AnswerFacts facts;
        facts.status = code(status);
        facts.count_sent(s.response);
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
    // What the stream had of a request: its line, as far as it came, and the fields the log shows.
    HttpRequest request;
    request.method = s.method;
    request.target = s.path;
    request.http_major = 2;
    request.http_minor = 0;
    HttpHeader shown[2];
    std::size_t count = 0;
    for (const HttpHeader& header : s.headers)
        if (count < 2 && (header.name == "user-agent" || header.name == "referer")) shown[count++] = header;
    request.headers = std::span<const HttpHeader>(shown, count);
    loop_.access->add(client(), &request, facts);
}

void Http2Session::submit(Http2Stream& s) {
    if (!read_response_head(s.response, fields_)) {
        spdlog::error("client {}:{}: stream {}: an answer without a well-formed head; stream reset", address_, port_,
                      s.id);
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
        s.head_submitted = true;
        return;
    }
    if (!s.protocol.empty() && !s.websocket && fields_.status / 100 == 2) {
        // A 2xx to a CONNECT opens its tunnel (RFC 9110 §9.3.6, RFC 8441 §5): a route that did not
        // accept the WebSocket must not say so.
        spdlog::warn("client {}:{}: stream {}: {} answered a WebSocket's extended CONNECT with {} without accepting "
                     "it; 501 sent instead",
                     address_, port_, s.id, s.path, fields_.status);
        s.response.clear();
        append_error(s.response, HttpStatus::not_implemented, loop_.date.now(), true, false, false);
        if (!read_response_head(s.response, fields_)) return;
    }
    s.sent = fields_.head_size;
    char status[3] = {char('0' + fields_.status / 100 % 10), char('0' + fields_.status / 10 % 10),
                      char('0' + fields_.status % 10)};
    nv_.clear();
    nv_.push_back(field(":status", {status, 3}));
    for (const HttpHeader& header : fields_.fields) nv_.push_back(field(header.name, header.value));
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
    streams_.erase(found);
    last_stream_ = coarse_now_ms();
}

}  // namespace cspd
