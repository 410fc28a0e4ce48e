// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out; IMF-fixdate, RFC 850 and asctime in, as a
// recipient must accept all three.
#pragma once

#include <ctime>
#include <optional>
#include <string_view>

namespace cspd {

/// "Sun, 06 Nov 1994 08:49:37 GMT" into `out` (at least 30 bytes); the view points there.
std::string_view format_http_date(std::time_t when, char* out);

/// The time an HTTP date names, or nullopt if it is none of the three formats.
std::optional<std::time_t> parse_http_date(std::string_view text);

}  // namespace cspd
