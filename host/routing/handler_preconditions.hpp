// Conditional requests answered for handlers: a handler that sets ETag or Last-Modified on a 200
// gets If-None-Match / If-Modified-Since answered with 304, and If-Match / If-Unmodified-Since
// with 412, by the host, from the same rules as static files (http/preconditions).
#pragma once

#include "http/preconditions.hpp"
#include "http/request.hpp"

#include <string_view>

namespace cspd {

/// The validators among a reply's serialized header lines ("Name: value\r\n"...), if any.
Validators validators_in(std::string_view header_lines);

/// What a 200 with `header_lines` becomes for `request`: proceed, not_modified or failed.
Precondition handler_precondition(const HttpRequest& request, std::string_view header_lines);

}  // namespace cspd
