#include "common/clocks.hpp"

#include <ctime>

namespace cspd {
namespace {
std::int64_t read_ns(clockid_t clock) noexcept {
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

std::int64_t unix_now_ms() noexcept { return read_ns(CLOCK_REALTIME) / 1'000'000; }
std::int64_t unix_now_us() noexcept { return read_ns(CLOCK_REALTIME) / 1'000; }
std::int64_t monotonic_now_ns() noexcept { return read_ns(CLOCK_MONOTONIC); }
std::int64_t coarse_monotonic_now_ns() noexcept { return read_ns(CLOCK_MONOTONIC_COARSE); }
std::uint32_t coarse_now_ms() noexcept { return std::uint32_t(read_ns(CLOCK_MONOTONIC_COARSE) / 1'000'000); }

std::uint32_t coarse_slack_ms() noexcept {
    static const std::uint32_t slack = [] {
        timespec resolution{};
        ::clock_getres(CLOCK_MONOTONIC_COARSE, &resolution);
        const std::int64_t ns = std::int64_t(resolution.tv_sec) * 1'000'000'000 + resolution.tv_nsec;
        return std::uint32_t((ns + 999'999) / 1'000'000) + 1;
    }();
    return slack;
}

}  // namespace cspd
