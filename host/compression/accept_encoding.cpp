#include "compression/accept_encoding.hpp"

#include "common/ascii.hpp"

#include <array>

namespace cspd {
namespace {

constexpr int kUnnamed = -1;  // no element names it

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
    return s;
}

/// RFC 9110 §12.4.2's qvalue, in thousandths; none if it does not parse.
std::optional<int> parse_qvalue(std::string_view text) {
    if (text.empty() || text.size() > 5 || (text[0] != '0' && text[0] != '1')) return std::nullopt;
    int value = (text[0] - '0') * 1000;
    if (text.size() == 1) return value;
    if (text[1] != '.') return std::nullopt;
    int scale = 100;
    for (const char c : text.substr(2)) {
        if (c < '0' || c > '9') return std::nullopt;
        value += (c - '0') * scale;
        scale /= 10;
    }
    if (value > 1000) return std::nullopt;  // "1.5"
    return value;
}

/// One element's q: 1000 unless a q parameter says otherwise; none if a q does not parse.
std::optional<int> element_q(std::string_view params) {
    int q = 1000;
    while (!params.empty()) {
        // params holds "; name=value; ..." from its first ';'.
        params.remove_prefix(1);
        const std::size_t end = params.find(';');
        const std::string_view param = trim(params.substr(0, end));
        params = end == std::string_view::npos ? std::string_view{} : params.substr(end);
        const std::size_t eq = param.find('=');
        if (eq == std::string_view::npos) continue;
        if (!iequals(trim(param.substr(0, eq)), "q")) continue;
        const std::optional<int> parsed = parse_qvalue(trim(param.substr(eq + 1)));
        if (!parsed) return std::nullopt;
        q = *parsed;
    }
    return q;
}

}  // namespace

std::optional<ContentCoding> coding_named(std::string_view name) {
    if (iequals(name, "gzip") || iequals(name, "x-gzip")) return ContentCoding::gzip;
    if (iequals(name, "br")) return ContentCoding::br;
    if (iequals(name, "zstd")) return ContentCoding::zstd;
    if (iequals(name, "identity")) return ContentCoding::identity;
    return std::nullopt;
}

ContentCoding choose_coding(std::optional<std::string_view> accept_encoding, std::span<const ContentCoding> offered) {
    if (!accept_encoding || offered.empty()) return ContentCoding::identity;
    std::array<int, 4> named{kUnnamed, kUnnamed, kUnnamed, kUnnamed};  // by ContentCoding
    int star = kUnnamed;
    std::string_view rest = *accept_encoding;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view element = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (element.empty()) continue;  // "gzip,,br" and a trailing comma are allowed (RFC 9110 §5.6.1)
        const std::size_t semicolon = element.find(';');
        const std::string_view name = trim(element.substr(0, semicolon));
        const std::optional<int> q =
            element_q(semicolon == std::string_view::npos ? std::string_view{} : element.substr(semicolon));
        if (!q) continue;
        if (name == "*") {
            if (star == kUnnamed) star = *q;
        } else if (const std::optional<ContentCoding> coding = coding_named(name)) {
            int& slot = named[static_cast<std::size_t>(*coding)];
            if (slot == kUnnamed) slot = *q;  // the first mention counts
        }
    }
    ContentCoding best = ContentCoding::identity;
    int best_q = 0;
    for (const ContentCoding coding : offered) {
        if (coding == ContentCoding::identity) continue;
        int q = named[static_cast<std::size_t>(coding)];
        if (q == kUnnamed) q = star;
        if (q > best_q) {
            best = coding;
            best_q = q;
        }
    }
    // Identity competes only where the client ranks it: named, or through `*`.
    int identity_q = named[static_cast<std::size_t>(ContentCoding::identity)];
    if (identity_q == kUnnamed) identity_q = star == kUnnamed ? 0 : star;
    return best_q > 0 && best_q >= identity_q ? best : ContentCoding::identity;
}

}  // namespace cspd
