// One HTTP/2 stream of an Http2Session: the request as its HEADERS and DATA frames bring it,
// and the answer on its way out as DATA frames; or, after an extended CONNECT a handler accepted,
// a WebSocket conversation (Http2WebSocket) whose frames its DATA carries both ways. Owned by its session, from the client's first
// HEADERS frame until nghttp2 closes the stream. Loop thread only.
#pragma once

#include "http/request.hpp"
#include "http/spilled_body.hpp"
#include "routing/static_files.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/exchange/websocket_link.hpp"
#include "serving/protocols/http2_websocket.hpp"

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

struct Http2Stream {
    /// Why a request is answered by the host rather than routed.
    enum class Refusal : std::uint8_t {
        none,
        head_too_large,  ///< its header list is past --max-header-size: 431
        body_too_large,  ///< past --max-body: 413
        spill_failed,    ///< its body could not be written to a temporary file: 503
        no_room,         ///< over its share of the upload folder: 507
    };

    explicit Http2Stream(std::int32_t stream_id) : id(stream_id) {}
    ~Http2Stream() {
        for (nghttp2_rcbuf* held : names_and_values) nghttp2_rcbuf_decref(held);
    }
    Http2Stream(const Http2Stream&) = delete;
    Http2Stream& operator=(const Http2Stream&) = delete;

    /// A new stream `id`: one this thread let go of before, when there is one (no allocation).
    static std::unique_ptr<Http2Stream> make(std::int32_t id);
    /// `s` is over: what it holds goes now; the object is kept for this thread's next stream, or freed.
    static void let_go(std::unique_ptr<Http2Stream> s);

    /// Lets go of everything this stream holds, as its destruction would, and becomes a new
    /// stream `stream_id` in its place, but for the room its field vectors grew to (the next
    /// stream's fields fill them again without allocating).
    void recycle(std::int32_t stream_id) {
        std::vector<nghttp2_rcbuf*> held = std::move(names_and_values);
        std::vector<HttpHeader> fields = std::move(headers);
        for (nghttp2_rcbuf* buffer : held) nghttp2_rcbuf_decref(buffer);
        held.clear();
        fields.clear();
        this->~Http2Stream();
        new (this) Http2Stream(stream_id);
        names_and_values = std::move(held);
        headers = std::move(fields);
    }

    /// More of the answer to send, behind what waits: what went out already is let go.
    void append_output(std::string&& bytes) {
        if (sent == response.size()) {
            response = std::move(bytes);
        } else {
            response.erase(0, sent);
            response.append(bytes);
        }
        sent = 0;
    }

    /// Bytes of the answer built and not yet taken by nghttp2 (an answer without a body lets all go).
    std::size_t unsent() const { return response.size() > sent ? response.size() - sent : 0; }

    /// The request as the access log shows it: its line and fields, as far as they came.
    HttpRequest logged_request() const {
        HttpRequest request;
        request.method = method;
        request.target = path;
        request.headers = headers;
        request.http_major = 2;
        request.http_minor = 0;
        return request;
    }

    /// Bytes of the body received so far.
    std::size_t body_size() const { return spill ? spill->size() : body.size(); }

    std::int32_t id;

    // The request. Its views point into nghttp2's own buffers, held here (no copy).
    std::vector<nghttp2_rcbuf*> names_and_values;
    std::vector<HttpHeader> headers;  ///< regular fields, lower case, as received
    std::string_view method, path, authority, scheme;
    std::string_view protocol;  ///< :protocol, of an extended CONNECT (RFC 8441)
    std::string cookie;  ///< several cookie fields joined with "; " (RFC 9113 §8.2.3)
    std::size_t cookie_fields = 0;
    std::size_t header_bytes = 0;  ///< names and values so far, as --max-header-size counts them
    std::string body;  ///< the request's body; a WebSocket's bytes read and not yet handed over
    std::shared_ptr<SpilledBody> spill;  ///< the body, once over --body-memory
    Refusal refused = Refusal::none;
    bool request_complete = false;  ///< END_STREAM came: it can be routed

    // The answer: its HEADERS went to nghttp2 when submitted (head_submitted); its body
    // bytes sent from `sent` on as DATA; then `file`'s bytes, for a static file.
    std::string response;
    std::size_t sent = 0;
    StaticFiles::File file;
    std::size_t file_sent = 0;
    std::shared_ptr<PendingExchange> pending;  ///< the answer comes later (deferred, blocking, streamed)
    std::shared_ptr<WebSocketLink> upgrade;    ///< its handler accepted a WebSocket (during the call)
    std::unique_ptr<Http2WebSocket> websocket; ///< ... which the stream carries from the 200 on
    std::uint32_t waiting_since = 0;           ///< coarse ms: when the answer began to be owed
    std::uint32_t last_in = 0;                 ///< coarse ms: the request's last frame (its timeout)
    std::uint32_t last_out = 0;                ///< coarse ms: the answer's last DATA out (the send timeout)
    std::int64_t began_ns = 0;                 ///< monotonic, for the access log
    bool head_submitted = false;               ///< the HEADERS frame is queued
    bool stream_ended = false;                 ///< a streamed answer is complete: DATA ends with its bytes
    bool data_deferred = false;                ///< nghttp2 waits (NGHTTP2_ERR_DEFERRED) for more bytes
    bool head_request = false;
    bool reset_when_answered = false;          ///< answered before the request was whole: RST_STREAM NO_ERROR after
    bool end_heard = false;                    ///< a WebSocket's conversation heard the client's END_STREAM
};

}  // namespace cspd
