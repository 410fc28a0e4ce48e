#include "http_response.hpp"

#include <charconv>

namespace cspd {

std::string_view reason_phrase(int status) {
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

namespace {
void append_number(std::string& out, std::size_t n) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    out.append(digits, end);
}

/// RFC 9110 §6.4.1: these never carry content.
bool forbids_body(int status) { return status == 204 || status == 304 || (status >= 100 && status < 200); }
} // namespace

void append_head(std::string& out, const ResponseHead& head, std::size_t content_length) {
    out.append("HTTP/1.1 ");
    append_number(out, static_cast<std::size_t>(head.status));
    out.push_back(' ');
    out.append(reason_phrase(head.status));
    out.append("\r\nServer: cspd\r\nDate: ");
    out.append(head.date);
    if (!forbids_body(head.status)) {
        out.append("\r\nContent-Type: ");
        out.append(head.content_type);
        out.append("\r\nContent-Length: ");
        append_number(out, content_length);
    }
    if (!head.keep_alive)
        out.append("\r\nConnection: close");
    else if (head.http10)
        out.append("\r\nConnection: keep-alive");
    out.append("\r\n");
    out.append(head.extra_headers);
    out.append("\r\n");
}

void append_response(std::string& out, const ResponseHead& head, std::string_view body) {
    append_head(out, head, body.size());
    if (!head.head_only && !forbids_body(head.status)) out.append(body);
}

void append_error(std::string& out, int status, std::string_view date, bool keep_alive, bool http10,
                  bool head_only) {
    std::string_view reason = reason_phrase(status);
    char body[64];
    auto [end, ec] = std::to_chars(body, body + 4, status);
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
    append_response(out, head, std::string_view(body, static_cast<std::size_t>(end - body)));
}

} // namespace cspd
