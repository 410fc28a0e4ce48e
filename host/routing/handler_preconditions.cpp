#include "routing/handler_preconditions.hpp"

#include "common/ascii.hpp"
#include "http/http_date.hpp"

namespace cspd {

Validators validators_in(std::string_view lines) {
    Validators found;
    while (!lines.empty()) {
        const std::size_t end = lines.find("\r\n");
        const std::string_view line = lines.substr(0, end);
        lines = end == std::string_view::npos ? std::string_view{} : lines.substr(end + 2);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = line.substr(0, colon);
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        if (iequals(name, "etag")) found.etag = value;
        else if (iequals(name, "last-modified"))
            if (const auto date = parse_http_date(value)) found.last_modified = *date;
    }
    return found;
}

Precondition handler_precondition(const HttpRequest& request, std::string_view header_lines) {
    // Most replies set no header at all: that costs one test.
    if (header_lines.empty()) return Precondition::proceed;
    const Validators validators = validators_in(header_lines);
    if (validators.etag.empty() && validators.last_modified < 0) return Precondition::proceed;
    return evaluate_preconditions(request, validators);
}

}  // namespace cspd
