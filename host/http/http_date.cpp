#include "http/http_date.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace cspd {

std::string_view format_http_date(std::time_t when, char* out) {
    std::tm tm{};
    gmtime_r(&when, &tm);
    const std::size_t n = std::strftime(out, 30, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return {out, n};
}

std::optional<std::time_t> parse_http_date(std::string_view text) {
    if (text.size() > 64) return std::nullopt;
    const std::string copy(text);
    // strptime reads names in the C locale's spelling, which HTTP's are.
    for (const char* format : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"}) {
        std::tm tm{};
        const char* end = strptime(copy.c_str(), format, &tm);
        if (end && *end == '\0') return timegm(&tm);
    }
    return std::nullopt;
}

}  // namespace cspd
