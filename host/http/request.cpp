#include "http/request.hpp"

#include "common/ascii.hpp"

namespace cspd {

std::string_view HttpRequest::header(std::string_view name) const {
    for (const auto& h : headers)
        if (iequals(h.name, name)) return h.value;
    return {};
}

}  // namespace cspd
