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

}  // namespace cspd
