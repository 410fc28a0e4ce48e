// One parsed HTTP request: views, into memory its connection owns. HTTP/1's point into the bytes
// the parser was fed or its own copy of a request that arrived in pieces, valid until that parser
// is fed again; HTTP/2's into nghttp2's buffers, which its stream holds until it closes. A body
// spilled to a file is the exception: `body_owner` keeps its mapping for whoever holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace cspd {

struct HttpHeader {
    std::string_view name;
    std::string_view value;
};

struct HttpRequest {
    std::string_view method;
    std::string_view target;  ///< raw request-target, e.g. "/csp/hello?x=1"
    std::span<const HttpHeader> headers;
    std::string_view body;
    /// Set when the body is a spilled file's mapping (SpilledBody): holding it keeps `body` valid
    /// past the next feed, with no copy.
    std::shared_ptr<const void> body_owner;
    /// HTTP/2's :protocol, of an extended CONNECT (RFC 8441); empty otherwise.
    std::string_view protocol;
    std::uint8_t http_major = 1;
    std::uint8_t http_minor = 1;
    bool keep_alive = true;  ///< what the client asked for (llhttp_should_keep_alive)
    bool head = false;       ///< HEAD: answer without a body

    /// First header with this name, compared case-insensitively; empty view with null data if absent.
    std::string_view header(std::string_view name) const;
};

}  // namespace cspd
