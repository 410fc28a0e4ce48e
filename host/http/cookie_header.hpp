// The Cookie request header (RFC 6265 §5.4: "a=1; b=2"), parsed the lenient way browsers' own
// servers do: pairs without '=' are skipped, spaces around names and values trimmed, and one pair
// of double quotes around a value removed. Values are otherwise as sent. Pure, so it is fuzzed alone.
#pragma once

#include "common/ascii.hpp"

#include <string_view>

namespace cspd {

/// Calls `fn(name, value)` for each cookie in one Cookie header's value, in order; stops early
/// when `fn` returns false.
template <class Fn>
void for_each_cookie(std::string_view header, Fn&& fn) {
    while (!header.empty()) {
        const std::size_t semicolon = header.find(';');
        const std::string_view pair = header.substr(0, semicolon);
        header = semicolon == std::string_view::npos ? std::string_view{} : header.substr(semicolon + 1);
        const std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view name = trim_ows(pair.substr(0, eq));
        std::string_view value = trim_ows(pair.substr(eq + 1));
        if (name.empty()) continue;
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        if (!fn(name, value)) return;
    }
}

}  // namespace cspd
