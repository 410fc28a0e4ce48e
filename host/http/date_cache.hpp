// The IMF-fixdate for the Date header, formatted at most once a second.
// One per event loop: no sharing, no lock.
#pragma once

#include <ctime>
#include <string_view>

namespace cspd {

class DateCache {
public:
    /// "Sun, 06 Nov 1994 08:49:37 GMT", current to the second.
    std::string_view now();

private:
    std::time_t second_ = -1;
    char text_[32] = {};
    std::size_t size_ = 0;
};

}  // namespace cspd
