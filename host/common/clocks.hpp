// The clocks the host reads, in the units it stores.
#pragma once

#include <cstdint>

namespace cspd {

/// CLOCK_REALTIME, milliseconds since the epoch: for start and load times people read.
std::int64_t unix_now_ms() noexcept;
/// The same in microseconds: for access log lines.
std::int64_t unix_now_us() noexcept;
/// CLOCK_MONOTONIC, nanoseconds.
std::int64_t monotonic_now_ns() noexcept;
/// CLOCK_MONOTONIC_COARSE: same clock, a few milliseconds of resolution, several times cheaper.
std::int64_t coarse_monotonic_now_ns() noexcept;
/// The coarse clock in milliseconds, modulo 2^32: a cheap timestamp for deadlines. The difference of
/// two readings is right for 49 days (24 when they are ordered with coarse_later), and overstates
/// the time between them by less than coarse_slack_ms().
std::uint32_t coarse_now_ms() noexcept;
/// The coarse clock's resolution rounded up to a millisecond (a jiffy, 1 to 10 ms).
std::uint32_t coarse_slack_ms() noexcept;
/// The later of two coarse_now_ms() readings (right across the wrap).
inline std::uint32_t coarse_later(std::uint32_t a, std::uint32_t b) noexcept {
    return std::int32_t(a - b) >= 0 ? a : b;
}
/// True once `seconds` have surely passed since `since` (both coarse_now_ms() readings): never
/// early, whatever the clock's resolution.
inline bool coarse_passed(std::uint32_t now, std::uint32_t since, unsigned seconds) noexcept {
    return now - since >= std::uint64_t(seconds) * 1000 + coarse_slack_ms();
}

}  // namespace cspd
