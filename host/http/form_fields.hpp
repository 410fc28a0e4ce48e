// application/x-www-form-urlencoded (a query string, or a form's body): its fields in order,
// raw, for the caller to decode (percent_decode with `+` as a space). Pure, so it is fuzzed alone.
#pragma once

#include "common/ascii.hpp"

#include <string_view>

namespace cspd {

/// Calls `fn(name, value)` with each "name=value" (or "name": an empty value) between '&'s, in
/// order, skipping empty pairs; stops early when `fn` returns false.
template <class Fn>
void for_each_form_field(std::string_view text, Fn&& fn) {
    while (!text.empty()) {
        const std::size_t amp = text.find('&');
        const std::string_view pair = text.substr(0, amp);
        text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
        if (pair.empty()) continue;
        const std::size_t eq = pair.find('=');
        const std::string_view name = pair.substr(0, eq);
        const std::string_view value = eq == std::string_view::npos ? pair.substr(pair.size()) : pair.substr(eq + 1);
        if (!fn(name, value)) return;
    }
}

/// True for a Content-Type of application/x-www-form-urlencoded, with or without parameters.
inline bool is_form_urlencoded(std::string_view content_type) {
    constexpr std::string_view kType = "application/x-www-form-urlencoded";
    if (content_type.size() < kType.size() || !iequals(content_type.substr(0, kType.size()), kType)) return false;
    const std::string_view rest = content_type.substr(kType.size());
    return rest.empty() || rest.front() == ';' || rest.front() == ' ' || rest.front() == '\t';
}

}  // namespace cspd
