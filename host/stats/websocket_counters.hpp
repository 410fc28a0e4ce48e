// How each loop counts the ends of WebSocket conversations (in its LoopSlot): by the close code
// that ended them, grouped as /metrics and /-/status name them.
#pragma once

#include <cstddef>

namespace cspd {

inline constexpr std::size_t kWsCloseKinds = 10;
inline constexpr const char* kWsCloseNames[kWsCloseKinds] = {
    "1000", "1001", "1002", "1006", "1007", "1008", "1009", "1011", "1012", "other"};

/// Where a close code is counted.
inline std::size_t ws_close_kind(int code) {
    switch (code) {
    case 1000: return 0;
    case 1001: return 1;
    case 1002: return 2;
    case 1006: return 3;
    case 1007: return 4;
    case 1008: return 5;
    case 1009: return 6;
    case 1011: return 7;
    case 1012: return 8;
    default: return 9;
    }
}

}  // namespace cspd
