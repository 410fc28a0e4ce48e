// FNV-1a, 64 bits: how a handler version is identified in logs, /-/status and `cspd hash`.
// Not a cryptographic hash: it tells versions apart, it does not vouch for them.
#pragma once

#include <cstdint>
#include <string_view>

namespace cspd {

inline constexpr std::uint64_t kFnv1a64Start = 0xcbf29ce484222325ull;

/// Continues the hash `h` over `bytes` (start with kFnv1a64Start).
inline std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = kFnv1a64Start) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace cspd
