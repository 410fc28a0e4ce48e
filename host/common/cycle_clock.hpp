// A cheap clock for timing handler calls. clock_gettime(CLOCK_MONOTONIC) costs ~27 ns
// under kvm-clock, twice per request; the time-stamp counter costs ~11 ns. Used where the
// CPU says its counter ticks at a constant rate (constant_tsc, nonstop_tsc), calibrated
// once per process against CLOCK_MONOTONIC; elsewhere it is CLOCK_MONOTONIC itself.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace cspd {

class CycleClock {
public:
    /// Measures the counter's rate (a few milliseconds) once; later calls return at once.
    static void calibrate();

    /// Ticks of an arbitrary origin; only differences mean something, and only in one process.
    static std::uint64_t now() noexcept {
#if defined(__x86_64__)
        if (use_tsc_) return __rdtsc();
#endif
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        return std::uint64_t(ts.tv_sec) * 1'000'000'000u + std::uint64_t(ts.tv_nsec);
    }

    /// Nanoseconds in `ticks`.
    static double to_ns(std::uint64_t ticks) noexcept { return double(ticks) * ns_per_tick_; }

private:
    static inline bool use_tsc_ = false;
    static inline double ns_per_tick_ = 1.0;
};

}  // namespace cspd
