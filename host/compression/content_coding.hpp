// The content codings cspd answers in (RFC 9110 §8.4.1): zstd (RFC 8878), br (RFC 7932) and
// gzip (RFC 1952), or none (identity).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cspd {

enum class ContentCoding : std::uint8_t { identity, gzip, br, zstd };

/// Its name in Accept-Encoding and Content-Encoding.
constexpr std::string_view coding_name(ContentCoding coding) {
    switch (coding) {
    case ContentCoding::gzip: return "gzip";
    case ContentCoding::br: return "br";
    case ContentCoding::zstd: return "zstd";
    case ContentCoding::identity: break;
    }
    return "identity";
}

/// The coding `name` names, in any case ("x-gzip" is gzip, RFC 9110 §8.4.1.3); none if unknown.
std::optional<ContentCoding> coding_named(std::string_view name);

}  // namespace cspd
