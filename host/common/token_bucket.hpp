// A budget that refills at a steady rate up to a burst: a client may do this much at once, then
// so much a second. HTTP/2 keeps two per connection (frames that do no work, and resets). Times
// are a coarse clock's milliseconds (common/clocks), compared as differences: good across a wrap.
#pragma once

#include <algorithm>
#include <cstdint>

namespace cspd {

class TokenBucket {
public:
    /// Full (`burst` tokens) at `now_ms`, refilled at `per_second`.
    TokenBucket(double burst, double per_second, std::uint32_t now_ms) noexcept
        : tokens_(burst), burst_(burst), per_second_(per_second), at_ms_(now_ms) {}

    /// Takes a token at `now_ms`; false, taking nothing, when the budget is spent.
    bool take(std::uint32_t now_ms) noexcept {
        tokens_ = std::min(burst_, tokens_ + double(std::uint32_t(now_ms - at_ms_)) / 1000 * per_second_);
        at_ms_ = now_ms;
        if (tokens_ < 1) return false;
        tokens_ -= 1;
        return true;
    }

private:
    double tokens_;
    double burst_;
    double per_second_;
    std::uint32_t at_ms_;
};

}  // namespace cspd
