// The clocks the host reads, in the units it stores.
#pragma once

#include <cstdint>

namespace cspd {

/// CLOCK_REALTIME, milliseconds since the epoch: for start and load times people read.
std::int64_t unix_now_ms() noexcept;
/// CLOCK_MONOTONIC, nanoseconds.
std::int64_t monotonic_now_ns() noexcept;
/// CLOCK_MONOTONIC_COARSE: same clock, a few milliseconds of resolution, several times cheaper.
std::int64_t coarse_monotonic_now_ns() noexcept;

}  // namespace cspd
