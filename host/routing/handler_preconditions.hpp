// Conditional requests answered for handlers: a handler that sets ETag or Last-Modified on a 200
// gets If-None-Match / If-Modified-Since answered with 304, and If-Match / If-Unmodified-Since
// with 412, by the host, from the same rules as static files (http/preconditions).
#pragma once

#include "http/preconditions.hpp"
#include "http/request.hpp"
#include "http/response_fields.hpp"

#include <span>

namespace cspd {

/// The validators among a reply's fields, if any.
Validators validators_in(std::span<const ResponseField> fields);

/// What a 200 with `fields` becomes for `request`: proceed, not_modified or failed.
Precondition handler_precondition(const HttpRequest& request, std::span<const ResponseField> fields);

}  // namespace cspd
