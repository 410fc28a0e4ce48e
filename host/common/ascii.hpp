// ASCII helpers for protocol text: header names and tokens compare without locale.
#pragma once

#include <string_view>

namespace cspd {

inline char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c | 0x20) : c; }

/// ASCII case-insensitive equality, as header names are compared.
bool iequals(std::string_view a, std::string_view b) noexcept;

/// RFC 9110 §5.6.2 tchar: what a token (a header name, a method) may hold.
bool is_token_char(char c) noexcept;

/// A non-empty run of token characters.
bool is_token(std::string_view s) noexcept;

}  // namespace cspd
