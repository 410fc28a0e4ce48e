#include "http_request.hpp"

namespace cspd {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

std::string_view HttpRequest::header(std::string_view name) const {
    for (const auto& h : headers)
        if (iequals(h.name, name)) return h.value;
    return {};
}

} // namespace cspd
