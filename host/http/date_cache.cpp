#include "http/date_cache.hpp"

#include <time.h>

namespace cspd {

std::string_view DateCache::now() {
    timespec ts;
    // The coarse clock is a vDSO read of the last tick: cheap enough per response.
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != second_) {
        second_ = ts.tv_sec;
        std::tm tm;
        gmtime_r(&second_, &tm);
        size_ = std::strftime(text_, sizeof text_, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    return {text_, size_};
}

}  // namespace cspd
