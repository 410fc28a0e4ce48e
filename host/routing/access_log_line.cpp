#include "routing/access_log_line.hpp"

#include <charconv>
#include <ctime>

namespace cspd {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr char kUpperHex[] = "0123456789ABCDEF";  // nginx's, in \xHH

void append_number(std::string& out, std::uint64_t value) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out.append(digits, static_cast<std::size_t>(end - digits));
}

/// nginx's default log escaping: '"', '\' and bytes outside 0x20-0x7e become \xHH.
void append_nginx_escaped(std::string& out, std::string_view text) {
    if (text.empty()) {
        out += '-';
        return;
    }
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte > 0x7e || c == '"' || c == '\\') {
            out += "\\x";
            out += kUpperHex[byte >> 4];
            out += kUpperHex[byte & 15];
        } else {
            out += c;
        }
    }
}

/// The length of the valid UTF-8 sequence at the start of `text` (0: not one).
std::size_t utf8_sequence(std::string_view text) {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = at(0);
    std::size_t length;
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range (RFC 3629's table)
    if (lead >= 0xc2 && lead <= 0xdf) length = 2;
    else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        if (lead == 0xe0) low = 0xa0;
        if (lead == 0xed) high = 0x9f;  // no surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        if (lead == 0xf0) low = 0x90;
        if (lead == 0xf4) high = 0x8f;
    } else {
        return 0;
    }
    if (text.size() < length || at(1) < low || at(1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i)
        if (at(i) < 0x80 || at(i) > 0xbf) return 0;
    return length;
}

/// A JSON string: quotes, backslashes and control bytes escaped, valid UTF-8 kept, and each byte
/// that is not part of valid UTF-8 replaced by U+FFFD, so the line is always valid JSON.
void append_json_string(std::string& out, std::string_view text) {
    out += '"';
    while (!text.empty()) {
        const auto byte = static_cast<unsigned char>(text.front());
        std::size_t taken = 1;
        if (byte == '"' || byte == '\\') {
            out += '\\';
            out += static_cast<char>(byte);
        } else if (byte < 0x20 || byte == 0x7f) {
            out += "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 15];
        } else if (byte < 0x80) {
            out += static_cast<char>(byte);
        } else if (const std::size_t length = utf8_sequence(text)) {
            out.append(text.substr(0, length));
            taken = length;
        } else {
            out += "\xef\xbf\xbd";  // U+FFFD
        }
        text.remove_prefix(taken);
    }
    out += '"';
}

void append_protocol(std::string& out, const AccessRecord& record) {
    out += "HTTP/";
    out += static_cast<char>('0' + record.http_major % 10);
    out += '.';
    out += static_cast<char>('0' + record.http_minor % 10);
}

void append_combined(std::string& out, const AccessRecord& record, AccessTime& time) {
    out.append(record.client_address.empty() ? std::string_view("-") : record.client_address);
    out += " - - [";
    out.append(time.local(record.unix_us));
    out += "] \"";
    if (record.method.empty()) {
        out += '-';
    } else {
        append_nginx_escaped(out, record.method);
        out += ' ';
        append_nginx_escaped(out, record.target);
        out += ' ';
        append_protocol(out, record);
    }
    out += "\" ";
    append_number(out, static_cast<std::uint64_t>(record.status));
    out += ' ';
    append_number(out, record.body_bytes);
    out += " \"";
    append_nginx_escaped(out, record.referer);
    out += "\" \"";
    append_nginx_escaped(out, record.user_agent);
    out += "\"\n";
}

const char* responder_name(Responder responder) {
    switch (responder) {
    case Responder::handler: return "handler";
    case Responder::static_file: return "static";
    case Responder::builtin: return "builtin";
    case Responder::none: break;
    }
    return "none";
}

void append_json(std::string& out, const AccessRecord& record, AccessTime& time) {
    out += "{\"time\":\"";
    out.append(time.rfc3339(record.unix_us));
    out += "\",\"client\":";
    append_json_string(out, record.client_address);
    out += ",\"port\":";
    append_number(out, record.client_port);
    out += ",\"method\":";
    append_json_string(out, record.method);
    out += ",\"target\":";
    append_json_string(out, record.target);
    out += ",\"protocol\":\"";
    if (!record.method.empty()) append_protocol(out, record);
    out += "\",\"status\":";
    append_number(out, static_cast<std::uint64_t>(record.status));
    if (record.intended_status) {
        out += ",\"intended_status\":";
        append_number(out, static_cast<std::uint64_t>(record.intended_status));
    }
    out += ",\"bytes\":";
    append_number(out, record.bytes);
    out += ",\"body_bytes\":";
    append_number(out, record.body_bytes);
    out += ",\"referer\":";
    append_json_string(out, record.referer);
    out += ",\"user_agent\":";
    append_json_string(out, record.user_agent);
    out += ",\"duration_us\":";
    append_number(out, record.duration_us);
    out += ",\"responder\":\"";
    out += responder_name(record.responder);
    out += '"';
    if (record.responder == Responder::handler) {
        out += ",\"handler\":";
        append_json_string(out, record.handler);
        out += ",\"handler_hash\":\"";
        for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(record.handler_hash >> shift) & 15];
        out += '"';
    }
    out += ",\"cached\":";
    out += record.cached ? "true" : "false";
    out += ",\"request_id\":";
    append_json_string(out, record.request_id);
    out += ",\"worker\":";
    append_number(out, record.worker);
    out += "}\n";
}

}  // namespace

void AccessTime::refresh(std::int64_t second) {
    second_ = second;
    const std::time_t t = static_cast<std::time_t>(second);
    std::tm local{};
    ::localtime_r(&t, &local);
    local_size_ = std::strftime(local_, sizeof local_, "%d/%b/%Y:%H:%M:%S %z", &local);
    std::tm utc{};
    ::gmtime_r(&t, &utc);
    rfc_size_ = std::strftime(rfc_, sizeof rfc_, "%Y-%m-%dT%H:%M:%S", &utc);
}

std::string_view AccessTime::local(std::int64_t unix_us) {
    const std::int64_t second = unix_us / 1'000'000;
    if (second != second_) refresh(second);
    return {local_, local_size_};
}

std::string_view AccessTime::rfc3339(std::int64_t unix_us) {
    const std::int64_t second = unix_us / 1'000'000;
    if (second != second_) refresh(second);
    const auto millis = static_cast<unsigned>((unix_us / 1000) % 1000);
    char* end = rfc_ + rfc_size_;
    end[0] = '.';
    end[1] = static_cast<char>('0' + millis / 100);
    end[2] = static_cast<char>('0' + millis / 10 % 10);
    end[3] = static_cast<char>('0' + millis % 10);
    end[4] = 'Z';
    return {rfc_, rfc_size_ + 5};
}

std::size_t response_head_size(std::string_view answer) {
    const std::size_t end = answer.find("\r\n\r\n");
    return end == std::string_view::npos ? answer.size() : end + 4;
}

void append_access_line(std::string& out, const AccessRecord& record, AccessLogFormat format, AccessTime& time) {
    if (format == AccessLogFormat::json)
        append_json(out, record, time);
    else
        append_combined(out, record, time);
}

}  // namespace cspd
