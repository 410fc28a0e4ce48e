// One answer, whatever protocol carries it: a status, typed fields, and a body that is bytes, a
// file's range (the protocol sends it from the file) or a stream (its pieces follow). Routes,
// the reply cache and handlers make it once and hand it to a ResponseSink: the protocol session,
// which writes it in its own format (HTTP/1: http/http1_response.hpp; HTTP/2: HEADERS and DATA).
#pragma once

#include "http/response_fields.hpp"
#include "http/status.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cspd {

struct CompressionPolicy;

enum class BodyKind : std::uint8_t {
    bytes,   ///< `body` holds it
    file,    ///< `file_size` bytes that the protocol reads from a file after the head
    stream,  ///< pieces that come later; no length is known
};

struct Response {
    HttpStatus status = HttpStatus::ok;
    std::string_view content_type;          ///< sent unless empty or the status forbids a body
    std::span<const ResponseField> fields;  ///< the others, as the route or the handler set them
    BodyKind body_kind = BodyKind::bytes;
    std::string_view body;                  ///< BodyKind::bytes
    std::uint64_t file_size = 0;            ///< BodyKind::file
    std::string_view request_id;            ///< sent as X-Request-Id unless empty (--request-id-header)

    /// The Content-Length this answer says: its body's length; 0 for a 205; none for a stream or
    /// a status without content (RFC 9110 §8.6, RFC 9112 §6.3).
    std::optional<std::uint64_t> content_length() const {
        if (forbids_body(status)) return says_empty_length(status) ? std::optional<std::uint64_t>(0) : std::nullopt;
        if (body_kind == BodyKind::stream) return std::nullopt;
        return body_kind == BodyKind::file ? file_size : body.size();
    }
    /// Whether body bytes go on the wire for a request that asked for them (not a HEAD).
    bool sends_body() const { return !forbids_body(status); }
};

/// What the request decided of how its answer is framed, settled when it was routed (an answer
/// that comes later keeps it until then). HTTP/2 reads only `head_only`.
struct ResponseFrame {
    bool keep_alive = true;          ///< HTTP/1: the connection stays open after this answer
    bool http10 = false;             ///< HTTP/1.0: keep-alive said explicitly, streams end with the close
    bool head_only = false;          ///< HEAD: the head as for GET, no body
    bool request_id_header = false;  ///< the answer says X-Request-Id (--request-id-header)
    /// What answers may be compressed (--compress-*; the loop's, outliving the answer), or null:
    /// none is (--no-compress, or the host's own answers).
    const CompressionPolicy* compression = nullptr;
};

/// The host's short text/plain answer for `status` ("404 Not Found\n").
Response error_response(HttpStatus status, std::string_view request_id = {});

/// Where an answer goes: the protocol session that routed its request. `send` writes the whole
/// answer, or for a file the head (the file's bytes are the session's to send after it), or for
/// a stream the head (its pieces follow).
class ResponseSink {
public:
    virtual void send(const Response& response, const ResponseFrame& frame) = 0;

protected:
    ~ResponseSink() = default;
};

}  // namespace cspd
