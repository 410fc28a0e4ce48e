// When to start a worker again after it died: at once, unless it keeps dying young
// (three times in a row within 10 s of its start); then 100 ms, doubling, at most 5 s.
#pragma once

#include <algorithm>
#include <chrono>

namespace cspd {

class RestartBackoff {
public:
    using Clock = std::chrono::steady_clock;

    /// A worker started at `started` just died: how long to wait before the next start.
    Clock::duration after_death(Clock::time_point started, Clock::time_point now = Clock::now()) {
        using namespace std::chrono_literals;
        quick_deaths_ = now - started < 10s ? quick_deaths_ + 1 : 0;  // a long life starts the count again
        if (quick_deaths_ <= 2) return Clock::duration::zero();
        return std::min<Clock::duration>(100ms * (1u << std::min(quick_deaths_ - 3, 6u)), 5s);
    }

    /// Deaths in a row, each soon after its start.
    unsigned quick_deaths() const { return quick_deaths_; }

private:
    unsigned quick_deaths_ = 0;
};

}  // namespace cspd
