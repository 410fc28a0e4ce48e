// HTTP status codes as a type: what the host decides is an HttpStatus. A handler's int becomes
// one only once it is checked (from_handler). Plain ints remain where a status is only reported
// (the access log's line, the SDK's own signatures).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cspd {

/// Any code 100..599 is a valid value; these are the ones the host sends on its own.
enum class HttpStatus : std::uint16_t {
    continue_ = 100,
    switching_protocols = 101,
    ok = 200,
    partial_content = 206,
    moved_permanently = 301,
    not_modified = 304,
    bad_request = 400,
    forbidden = 403,
    not_found = 404,
    method_not_allowed = 405,
    request_timeout = 408,
    precondition_failed = 412,
    content_too_large = 413,
    uri_too_long = 414,
    range_not_satisfiable = 416,
    too_many_requests = 429,
    header_fields_too_large = 431,
    internal_server_error = 500,
    service_unavailable = 503,
    gateway_timeout = 504,
    http_version_not_supported = 505,
    not_implemented = 501,
    insufficient_storage = 507,
};

constexpr unsigned code(HttpStatus status) noexcept { return static_cast<unsigned>(status); }

/// What a handler returned, as a status the host may send: 200..599 (1xx are the host's).
constexpr std::optional<HttpStatus> from_handler(int status) noexcept {
    if (status < 200 || status > 599) return std::nullopt;
    return static_cast<HttpStatus>(status);
}

/// RFC 9110 §6.4.1 and §15.3.6: these never carry content.
constexpr bool forbids_body(HttpStatus status) noexcept {
    return status == HttpStatus{204} || status == HttpStatus{205} || status == HttpStatus{304} || code(status) < 200;
}

/// RFC 9112 §6.3: of those, 205 alone must still say how long its (empty) content is, or a
/// client would read to the close.
constexpr bool says_empty_length(HttpStatus status) noexcept { return status == HttpStatus{205}; }

/// Reason phrase ("OK", "Not Found", ...), for every code in IANA's HTTP status code registry
/// (RFC 9110 §15 and the RFCs it lists); "Unknown" for any other.
std::string_view reason_phrase(HttpStatus status) noexcept;

}  // namespace cspd
