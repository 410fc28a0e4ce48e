// Conditional requests (RFC 9110 §13): what a GET or HEAD (or another method) with If-Match,
// If-Unmodified-Since, If-None-Match or If-Modified-Since gets, given the representation's
// validators. Evaluated in the RFC's order (§13.2.2). Pure: static files and handlers share it.
#pragma once

#include "http/request.hpp"

#include <ctime>
#include <string_view>

namespace cspd {

struct Validators {
    std::string_view etag;        ///< with its quotes (and W/ if weak); empty: none
    std::time_t last_modified = -1;  ///< -1: none
};

enum class Precondition { proceed, not_modified, failed };

/// For a representation that exists: proceed (answer as usual), not_modified (304: GET and HEAD
/// only), or failed (412).
Precondition evaluate_preconditions(const HttpRequest& request, const Validators& validators);

/// True if a Range request may be served as a range: no If-Range, or one that matches (a strong
/// ETag, or the exact Last-Modified date).
bool if_range_holds(const HttpRequest& request, const Validators& validators);

/// Whether `etag` is among the comma-separated entity tags of `list` ("*" matches any), compared
/// strongly (both strong and equal) or weakly (equal once W/ is ignored).
bool etag_listed(std::string_view list, std::string_view etag, bool strong);

}  // namespace cspd
