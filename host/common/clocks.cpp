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
std::int64_t monotonic_now_ns() noexcept { return read_ns(CLOCK_MONOTONIC); }
std::int64_t coarse_monotonic_now_ns() noexcept { return read_ns(CLOCK_MONOTONIC_COARSE); }

}  // namespace cspd
