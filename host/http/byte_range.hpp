// The Range header (RFC 9110 §14) for a representation of `size` bytes. One range is served as
// 206; several are answered with the whole representation (200), as the RFC allows, which keeps
// every response a single body; one that cannot be satisfied is 416.
#pragma once

#include <cstdint>
#include <string_view>

namespace cspd {

struct ByteRange {
    enum class Kind { whole, single, unsatisfiable };
    Kind kind = Kind::whole;
    std::uint64_t first = 0, last = 0;  ///< inclusive, for `single`
};

/// `header` is the Range value (empty data: none). Anything not "bytes=..." or malformed is
/// ignored (whole), as the RFC says a recipient may.
ByteRange parse_byte_range(std::string_view header, std::uint64_t size);

}  // namespace cspd
