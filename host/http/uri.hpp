// Request-target helpers: split, strip scheme and authority, percent-decode, check path segments.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

struct SplitTarget {
    std::string_view path;   ///< raw, still percent-encoded
    std::string_view query;  ///< after '?', without it; empty if none
};

SplitTarget split_target(std::string_view target);

/// "http://host:8080/a?b" -> "/a?b"; "http://host?b" -> "?b"; "http://host" -> ""; anything else as is.
std::string_view without_scheme_and_authority(std::string_view target);

/// Appends the decoding of `in` to `out`. With plus_is_space, '+' becomes ' '
/// (form encoding, for query strings). False on a malformed escape or an encoded NUL.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space);

/// RFC 3986 §3.2.2-3.2.3: a Host header's value is `host [ ":" port ]`, host an IP literal in
/// brackets, an IPv4 address or a reg-name (unreserved, sub-delims, %XX). Empty is valid (a target
/// without an authority, RFC 9112 §3.2).
bool is_valid_host_header(std::string_view value);

/// True if any '/'-separated segment is "..", "." or contains a backslash.
bool has_unsafe_segment(std::string_view decoded_path);

/// True if a segment starts with '.' (".git", ".env"), except ".well-known" (RFC 8615).
bool has_hidden_segment(std::string_view decoded_path);

}  // namespace cspd
