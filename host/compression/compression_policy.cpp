#include "compression/compression_policy.hpp"

#include "common/ascii.hpp"

namespace cspd {
namespace {

bool ends_with_nocase(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && iequals(text.substr(text.size() - suffix.size()), suffix);
}

bool matches(std::string_view pattern, std::string_view type, std::string_view subtype) {
    const std::size_t slash = pattern.find('/');
    if (slash == std::string_view::npos || !iequals(pattern.substr(0, slash), type)) return false;
    const std::string_view wanted = pattern.substr(slash + 1);
    if (wanted == "*") return true;
    if (wanted.size() > 1 && wanted[0] == '*' && wanted[1] == '+')  // "*+json": a structured suffix
        return subtype.size() > wanted.size() - 1 && ends_with_nocase(subtype, wanted.substr(1));
    return iequals(wanted, subtype);
}

}  // namespace

bool CompressionPolicy::compressible_type(std::string_view content_type) const {
    content_type = content_type.substr(0, content_type.find(';'));
    while (!content_type.empty() && (content_type.back() == ' ' || content_type.back() == '\t'))
        content_type.remove_suffix(1);
    while (!content_type.empty() && (content_type.front() == ' ' || content_type.front() == '\t'))
        content_type.remove_prefix(1);
    const std::size_t slash = content_type.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == content_type.size()) return false;
    const std::string_view type = content_type.substr(0, slash), subtype = content_type.substr(slash + 1);
    for (const std::string& pattern : types)
        if (matches(pattern, type, subtype)) return true;
    return false;
}

bool valid_type_pattern(std::string_view pattern) {
    const std::size_t slash = pattern.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == pattern.size()) return false;
    if (pattern.find('/', slash + 1) != std::string_view::npos) return false;
    for (const char c : pattern)
        if (c <= ' ' || c == ';' || c == ',' || c >= 0x7f) return false;
    return true;
}

}  // namespace cspd
