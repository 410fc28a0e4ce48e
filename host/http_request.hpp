// One parsed HTTP request. Views point into HttpParser's storage and are valid
// until the parser is fed again.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cspd {

struct HttpHeader {
    std::string_view name;
    std::string_view value;
};

struct HttpRequest {
    std::string_view method;
    std::string_view target;   ///< raw request-target, e.g. "/csp/hello?x=1"
    std::vector<HttpHeader> headers;
    std::string_view body;
    std::uint8_t http_major = 1;
    std::uint8_t http_minor = 1;
    bool keep_alive = true;    ///< what the client asked for (llhttp_should_keep_alive)
    bool head = false;         ///< HEAD: answer without a body

    /// First header with this name, compared case-insensitively; empty view with null data if absent.
    std::string_view header(std::string_view name) const;
};

inline char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c | 0x20) : c; }

/// ASCII case-insensitive equality, as header names are compared.
bool iequals(std::string_view a, std::string_view b);

} // namespace cspd
