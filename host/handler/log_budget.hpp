// How many log lines one handler version may write (SDK csp_log): a token bucket of `rate` lines a
// second holding up to twice that, shared by every thread of the process. Lines over it are
// dropped and counted, and the next line admitted reports them.
#pragma once

#include <cstdint>
#include <mutex>

namespace cspd {

class LogBudget {
public:
    /// True if one more line may be written now, at `rate` lines a second (0: none); `dropped`
    /// is then how many were refused since the last one admitted.
    bool admit(unsigned rate, std::int64_t now_ns, std::uint64_t& dropped) {
        std::lock_guard lock(mutex_);
        const double capacity = 2.0 * rate;
        if (started_) tokens_ = std::min(capacity, tokens_ + double(now_ns - last_ns_) * 1e-9 * rate);
        else tokens_ = capacity, started_ = true;
        last_ns_ = now_ns;
        if (tokens_ < 1.0) {
            ++dropped_;
            return false;
        }
        tokens_ -= 1.0;
        dropped = dropped_;
        dropped_ = 0;
        return true;
    }

private:
    std::mutex mutex_;
    bool started_ = false;
    double tokens_ = 0;
    std::int64_t last_ns_ = 0;
    std::uint64_t dropped_ = 0;
};

}  // namespace cspd
