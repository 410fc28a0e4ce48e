#include "http/http1_response.hpp"

#include <array>
#include <charconv>

namespace cspd {
namespace {

void append_number(std::string& out, std::uint64_t n) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    out.append(digits, end);
}

/// "HTTP/1.1 200 OK\r\nServer: cspd\r\nDate: ", formatted.
void append_status_line_start(std::string& out, HttpStatus status) {
    out.append("HTTP/1.1 ");
    append_number(out, code(status));
    out.push_back(' ');
    out.append(reason_phrase(status));
    out.append("\r\nServer: cspd\r\nDate: ");
}

/// The same for every code 100..599, made once: an answer then begins with one copy rather
/// than five appends and a number's formatting.
std::string_view status_line_start(HttpStatus status) {
    constexpr unsigned kFirst = 100, kLast = 599;
    static const std::array<std::string, kLast - kFirst + 1> lines = [] {
        std::array<std::string, kLast - kFirst + 1> made;
        for (unsigned c = kFirst; c <= kLast; ++c) append_status_line_start(made[c - kFirst], HttpStatus(c));
        return made;
    }();
    const unsigned c = code(status);
    return c >= kFirst && c <= kLast ? std::string_view(lines[c - kFirst]) : std::string_view();
}

}  // namespace

void write_http1(std::string& out, const Response& response, const ResponseFrame& frame, std::string_view date) {
    if (const std::string_view start = status_line_start(response.status); !start.empty())
        out.append(start);
    else
        append_status_line_start(out, response.status);  // not a code HttpStatus promises, but sent as it is
    out.append(date);
    if (!response.request_id.empty()) out.append("\r\nX-Request-Id: ").append(response.request_id);
    const bool content = response.sends_body();
    if (content && !response.content_type.empty()) out.append("\r\nContent-Type: ").append(response.content_type);
    // A stream's length is not known: chunks on HTTP/1.1, the close on HTTP/1.0 (which a 1.0
    // client reads to the end whatever keep-alive says).
    const bool streamed = content && response.body_kind == BodyKind::stream;
    bool keep_alive = frame.keep_alive;
    if (const std::optional<std::uint64_t> length = response.content_length()) {
        out.append("\r\nContent-Length: ");
        append_number(out, *length);
    } else if (streamed && !frame.http10) {
        out.append("\r\nTransfer-Encoding: chunked");
    } else if (streamed) {
        keep_alive = false;
    }
    if (!keep_alive)
        out.append("\r\nConnection: close");
    else if (frame.http10)
        out.append("\r\nConnection: keep-alive");
    out.append("\r\n");
    for (const ResponseField& field : response.fields) {
        out.append(field.name).append(": ").append(field.value);
        out.append("\r\n");
    }
    out.append("\r\n");
    if (response.body_kind == BodyKind::bytes && content && !frame.head_only) out.append(response.body);
}

}  // namespace cspd
