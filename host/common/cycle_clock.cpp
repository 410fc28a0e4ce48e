#include "common/cycle_clock.hpp"

#include "common/clocks.hpp"

#include <fstream>
#include <mutex>
#include <string>

namespace cspd {
namespace {
bool invariant_tsc() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
        if (line.rfind("flags", 0) == 0)
            return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    return false;
}
}  // namespace

void CycleClock::calibrate() {
    static std::once_flag once;
    std::call_once(once, [] {
#if defined(__x86_64__)
        if (!invariant_tsc()) return;
        // 5 ms against CLOCK_MONOTONIC: good to well under 0.1%, plenty for a latency histogram.
        const std::int64_t start_ns = monotonic_now_ns();
        const std::uint64_t start_ticks = __rdtsc();
        std::int64_t elapsed_ns;
        do {
            elapsed_ns = monotonic_now_ns() - start_ns;
        } while (elapsed_ns < 5'000'000);
        const std::uint64_t ticks = __rdtsc() - start_ticks;
        if (ticks == 0) return;
        ns_per_tick_ = double(elapsed_ns) / double(ticks);
        use_tsc_ = true;
#endif
    });
}

}  // namespace cspd
