#include "routing/handler_preconditions.hpp"

#include "common/ascii.hpp"
#include "http/http_date.hpp"

namespace cspd {

Validators validators_in(std::span<const ResponseField> fields) {
    Validators found;
    for (const ResponseField& field : fields) {
        if (iequals(field.name, "etag")) found.etag = field.value;
        else if (iequals(field.name, "last-modified"))
            if (const auto date = parse_http_date(field.value)) found.last_modified = *date;
    }
    return found;
}

Precondition handler_precondition(const HttpRequest& request, std::span<const ResponseField> fields) {
    // Most replies set no field at all: that costs one test.
    if (fields.empty()) return Precondition::proceed;
    const Validators validators = validators_in(fields);
    if (validators.etag.empty() && validators.last_modified < 0) return Precondition::proceed;
    return evaluate_preconditions(request, validators);
}

}  // namespace cspd
