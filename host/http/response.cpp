#include "http/response.hpp"

#include <array>
#include <charconv>
#include <string>

namespace cspd {

namespace {
void append_number(std::string& out, std::size_t n) {
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

/// The same for every code 100..599, made once: a response then begins with one copy rather
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

/// "HTTP/1.1 200 OK", Server and Date: how every response begins (no line end after Date).
void append_status_line(std::string& out, const ResponseHead& head) {
    if (const std::string_view start = status_line_start(head.status); !start.empty())
        out.append(start);
    else
        append_status_line_start(out, head.status);  // not a code HttpStatus promises, but sent as it is
    out.append(head.date);
    if (!head.request_id.empty()) out.append("\r\nX-Request-Id: ").append(head.request_id);
}

}  // namespace

void append_head(std::string& out, const ResponseHead& head, std::size_t content_length) {
    append_status_line(out, head);
    if (!forbids_body(head.status)) {
        out.append("\r\nContent-Type: ");
        out.append(head.content_type);
        out.append("\r\nContent-Length: ");
        append_number(out, content_length);
    } else if (says_empty_length(head.status)) {
        out.append("\r\nContent-Length: 0");
    }
    if (!head.keep_alive)
        out.append("\r\nConnection: close");
    else if (head.http10)
        out.append("\r\nConnection: keep-alive");
    out.append("\r\n");
    out.append(head.extra_headers);
    out.append("\r\n");
}

void append_stream_head(std::string& out, const ResponseHead& head) {
    append_status_line(out, head);
    out.append("\r\nContent-Type: ");
    out.append(head.content_type);
    if (head.http10)
        out.append("\r\nConnection: close");
    else
        out.append(head.keep_alive ? "\r\nTransfer-Encoding: chunked" : "\r\nTransfer-Encoding: chunked\r\nConnection: close");
    out.append("\r\n");
    out.append(head.extra_headers);
    out.append("\r\n");
}

void append_response(std::string& out, const ResponseHead& head, std::string_view body) {
    append_head(out, head, body.size());
    if (!head.head_only && !forbids_body(head.status)) out.append(body);
}

void append_error(std::string& out, HttpStatus status, std::string_view date, bool keep_alive, bool http10,
                  bool head_only, std::string_view request_id) {
    std::string_view reason = reason_phrase(status);
    char body[64];
    auto [end, ec] = std::to_chars(body, body + 4, code(status));
    *end++ = ' ';
    std::size_t n = std::min(reason.size(), sizeof body - 6);
    reason.copy(end, n);
    end += n;
    *end++ = '\n';
    ResponseHead head;
    head.status = status;
    head.content_type = "text/plain; charset=utf-8";
    head.date = date;
    head.keep_alive = keep_alive;
    head.http10 = http10;
    head.head_only = head_only;
    head.request_id = request_id;
    append_response(out, head, std::string_view(body, static_cast<std::size_t>(end - body)));
}

}  // namespace cspd
