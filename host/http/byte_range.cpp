#include "http/byte_range.hpp"

#include "common/ascii.hpp"

#include <charconv>

namespace cspd {
namespace {

bool number(std::string_view text, std::uint64_t& out) {
    if (text.empty()) return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

ByteRange parse_byte_range(std::string_view header, std::uint64_t size) {
    ByteRange whole;
    header = trim_ows(header);
    if (header.size() < 6 || header.substr(0, 6) != "bytes=") return whole;
    std::string_view spec = trim_ows(header.substr(6));
    if (spec.find(',') != std::string_view::npos) {
        // Several ranges: the whole body (a client asking for many pieces gets them all at once).
        return whole;
    }
    const std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return whole;
    const std::string_view from = trim_ows(spec.substr(0, dash)), to = trim_ows(spec.substr(dash + 1));
    ByteRange range;
    range.kind = ByteRange::Kind::single;
    if (from.empty()) {  // "-N": the last N bytes
        std::uint64_t suffix = 0;
        if (!number(to, suffix)) return whole;
        if (suffix == 0 || size == 0) return {ByteRange::Kind::unsatisfiable, 0, 0};
        range.first = suffix >= size ? 0 : size - suffix;
        range.last = size - 1;
        return range;
    }
    std::uint64_t first = 0;
    if (!number(from, first)) return whole;
    std::uint64_t last = size ? size - 1 : 0;
    if (!to.empty()) {
        if (!number(to, last) || last < first) return whole;  // "5-3" is invalid: ignored
        if (size && last >= size) last = size - 1;
    }
    if (first >= size) return {ByteRange::Kind::unsatisfiable, 0, 0};
    range.first = first;
    range.last = last;
    return range;
}

}  // namespace cspd
