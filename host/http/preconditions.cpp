#include "http/preconditions.hpp"

#include "common/ascii.hpp"
#include "http/http_date.hpp"

namespace cspd {
namespace {

bool weak(std::string_view tag) { return tag.starts_with("W/"); }
std::string_view opaque(std::string_view tag) { return weak(tag) ? tag.substr(2) : tag; }

}  // namespace

bool etag_listed(std::string_view list, std::string_view etag, bool strong) {
    if (trim_ows(list) == "*") return !etag.empty();
    if (etag.empty()) return false;
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        const std::string_view tag = trim_ows(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (tag.empty()) continue;
        if (strong ? (!weak(tag) && !weak(etag) && tag == etag) : opaque(tag) == opaque(etag)) return true;
    }
    return false;
}

Precondition evaluate_preconditions(const HttpRequest& request, const Validators& v) {
    const bool get_or_head = request.head || request.method == "GET";
    // 1. If-Match, else 2. If-Unmodified-Since.
    if (const std::string_view if_match = request.header("if-match"); if_match.data()) {
        if (!etag_listed(if_match, v.etag, true)) return Precondition::failed;
    } else if (const std::string_view since = request.header("if-unmodified-since"); since.data()) {
        const auto date = parse_http_date(trim_ows(since));
        if (date && v.last_modified >= 0 && v.last_modified > *date) return Precondition::failed;
    }
    // 3. If-None-Match, else 4. If-Modified-Since (GET and HEAD only).
    if (const std::string_view none_match = request.header("if-none-match"); none_match.data()) {
        if (etag_listed(none_match, v.etag, false))
            return get_or_head ? Precondition::not_modified : Precondition::failed;
    } else if (get_or_head) {
        if (const std::string_view since = request.header("if-modified-since"); since.data()) {
            const auto date = parse_http_date(trim_ows(since));
            if (date && v.last_modified >= 0 && v.last_modified <= *date) return Precondition::not_modified;
        }
    }
    return Precondition::proceed;
}

bool if_range_holds(const HttpRequest& request, const Validators& v) {
    const std::string_view condition = trim_ows(request.header("if-range"));
    if (!condition.data() || condition.empty()) return true;
    if (condition.front() == '"' || condition.starts_with("W/"))
        return !weak(condition) && !v.etag.empty() && !weak(v.etag) && condition == v.etag;
    const auto date = parse_http_date(condition);
    return date && v.last_modified >= 0 && *date == v.last_modified;
}

}  // namespace cspd
