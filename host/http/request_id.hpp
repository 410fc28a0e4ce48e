// Request ids (SDK csp_request_id, X-Request-Id): the client's, when it is sane, or one made from
// the event loop's random prefix and its request counter, formatted only when someone asks.
#pragma once

#include <cstdint>
#include <string_view>

namespace cspd {

struct RequestId {
    std::uint32_t prefix = 0;  ///< random per event loop
    std::uint64_t number = 0;  ///< that loop's count of requests

    static constexpr std::size_t kMaxText = 8 + 1 + 16;

    /// "5f3a9c01-2a" into `out` (kMaxText bytes at least); the view points there.
    std::string_view format(char* out) const {
        static constexpr char hex[] = "0123456789abcdef";
        std::size_t n = 0;
        for (int shift = 28; shift >= 0; shift -= 4) out[n++] = hex[(prefix >> shift) & 15];
        out[n++] = '-';
        int shift = 60;
        while (shift > 0 && ((number >> shift) & 15) == 0) shift -= 4;
        for (; shift >= 0; shift -= 4) out[n++] = hex[(number >> shift) & 15];
        return {out, n};
    }
};

/// A client's X-Request-Id worth keeping: 1 to 128 characters of A-Z a-z 0-9 - _ . : / + = @.
inline bool is_sane_request_id(std::string_view id) {
    if (id.empty() || id.size() > 128) return false;
    for (char c : id) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                        c == '_' || c == '.' || c == ':' || c == '/' || c == '+' || c == '=' || c == '@';
        if (!ok) return false;
    }
    return true;
}

}  // namespace cspd
