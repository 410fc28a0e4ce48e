// ASCII helpers for protocol text: header names and tokens compare without locale.
// Inline: the parser and the router call them for every header of every request.
#pragma once

#include <array>
#include <string_view>

namespace cspd {

inline char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c | 0x20) : c; }

/// ASCII case-insensitive equality, as header names are compared.
inline bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

namespace detail {
inline constexpr std::array<bool, 256> kTokenChars = [] {
    std::array<bool, 256> t{};
    for (int ch = 0; ch < 256; ++ch)
        t[ch] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                (ch != 0 && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(ch)) != std::string_view::npos);
    return t;
}();
} // namespace detail

/// RFC 9110 §5.6.2 tchar: what a token (a header name, a method) may hold.
inline bool is_token_char(char c) noexcept { return detail::kTokenChars[static_cast<unsigned char>(c)]; }

/// A non-empty run of token characters.
inline bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_token_char(c)) return false;
    return true;
}

/// `s` without the spaces and tabs (RFC 9110's optional whitespace) at either end.
inline std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

} // namespace cspd
