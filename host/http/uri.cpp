#include "http/uri.hpp"

#include "common/ascii.hpp"

namespace cspd {
namespace {
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

SplitTarget split_target(std::string_view target) {
    auto q = target.find('?');
    if (q == std::string_view::npos) return {target, {}};
    return {target.substr(0, q), target.substr(q + 1)};
}

std::string_view without_scheme_and_authority(std::string_view target) {
    std::size_t scheme_end;
    if (target.size() >= 7 && iequals(target.substr(0, 7), "http://"))
        scheme_end = 7;
    else if (target.size() >= 8 && iequals(target.substr(0, 8), "https://"))
        scheme_end = 8;
    else
        return target;
    const std::size_t path = target.find_first_of("/?", scheme_end);
    // "http://host" and "http://host?q" have an empty path: the caller reads that as "/".
    return path == std::string_view::npos ? std::string_view{} : target.substr(path);
}

bool percent_decode(std::string_view in, std::string& out, bool plus_is_space) {
    out.reserve(out.size() + in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= in.size()) return false;
            int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) return false;
            char decoded = static_cast<char>(hi * 16 + lo);
            if (decoded == '\0') return false;
            out.push_back(decoded);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return true;
}

bool has_unsafe_segment(std::string_view path) {
    if (path.find('\\') != std::string_view::npos) return true;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view seg = path.substr(start, end - start);
        if (seg == ".." || seg == ".") return true;
        start = end + 1;
    }
    return false;
}

bool has_hidden_segment(std::string_view path) {
    for (std::size_t at = path.find("/."); at != std::string_view::npos; at = path.find("/.", at + 1)) {
        std::string_view rest = path.substr(at + 1);
        if (!(rest.starts_with(".well-known/") || rest == ".well-known")) return true;
    }
    return false;
}

namespace {
bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_unreserved_or_sub_delim(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos;
}
}  // namespace

bool is_valid_host_header(std::string_view value) {
    std::size_t i = 0;
    if (!value.empty() && value.front() == '[') {
        // IP-literal: an IPv6 address or IPvFuture; its own grammar is not checked further, but
        // nothing outside those characters gets through.
        const std::size_t close = value.find(']');
        if (close == std::string_view::npos || close == 1) return false;
        for (i = 1; i < close; ++i)
            if (!is_unreserved_or_sub_delim(value[i]) && value[i] != ':') return false;
        i = close + 1;
    } else {
        // reg-name (an IPv4 address is one too)
        while (i < value.size() && value[i] != ':') {
            if (value[i] == '%') {
                if (i + 2 >= value.size() || !is_hex(value[i + 1]) || !is_hex(value[i + 2])) return false;
                i += 3;
                continue;
            }
            if (!is_unreserved_or_sub_delim(value[i])) return false;
            ++i;
        }
    }
    if (i == value.size()) return true;
    if (value[i] != ':' || value.size() - i - 1 > 5) return false;
    for (++i; i < value.size(); ++i)
        if (value[i] < '0' || value[i] > '9') return false;
    return true;
}

}  // namespace cspd
