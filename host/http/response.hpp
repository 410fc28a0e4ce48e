// Serializes responses straight into a connection's output buffer.
#pragma once

#include "http/status.hpp"

#include <string>
#include <string_view>

namespace cspd {

struct ResponseHead {
    HttpStatus status = HttpStatus::ok;
    std::string_view content_type;
    std::string_view extra_headers;  ///< "Name: value\r\n" lines, already validated
    std::string_view date;
    std::string_view request_id;  ///< sent as X-Request-Id when not empty (--request-id-header)
    bool keep_alive = true;
    bool http10 = false;     ///< a 1.0 client must be told keep-alive explicitly
    bool head_only = false;  ///< HEAD: headers as for GET, no body
};

/// Appends the status line and headers, ending with the blank line; the caller appends
/// exactly `content_length` body bytes unless the request was HEAD.
void append_head(std::string& out, const ResponseHead& head, std::size_t content_length);

/// Appends the head of a streamed response: chunked on HTTP/1.1, delimited by the close on
/// HTTP/1.0 (which then says Connection: close whatever `keep_alive` says).
void append_stream_head(std::string& out, const ResponseHead& head);

/// Appends a complete response (status line, headers, body) to `out`.
void append_response(std::string& out, const ResponseHead& head, std::string_view body);

/// A short text/plain error response, e.g. "404 Not Found\n".
void append_error(std::string& out, HttpStatus status, std::string_view date, bool keep_alive, bool http10,
                  bool head_only = false, std::string_view request_id = {});

}  // namespace cspd
