#include "routing/static_route.hpp"

#include "http/byte_range.hpp"
#include "http/http_date.hpp"
#include "http/preconditions.hpp"
#include "http/uri.hpp"
#include "common/clocks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <optional>

namespace cspd {
namespace {

/// A folder named without its slash: 301 to it with the slash, as nginx answers.
HttpStatus redirect_to_slash(Exchange& exchange) {
    // Location is built from the raw target's path so that encoding survives; leading slashes
    // collapse to one, or "//host/" would send the browser to another site.
    // The query goes along: /sub?x=1 is /sub/?x=1 (the target holds no control bytes by now).
    const SplitTarget target = split_target(without_scheme_and_authority(exchange.request.target));
    std::string_view raw = target.path;
    raw.remove_prefix(std::min(raw.find_first_not_of('/'), raw.size()));
    std::string location = "Location: /";
    location.append(raw).append("/");
    if (!target.query.empty()) location.append("?").append(target.query);
    location.append("\r\n");
    ResponseHead head = exchange.head(HttpStatus::moved_permanently, "text/plain; charset=utf-8");
    head.extra_headers = location;
    return exchange.send(head, "301 Moved Permanently\n");
}

/// The extra header lines of a file's answer, written into a fixed buffer (no allocation).
class HeaderLines {
public:
    [[gnu::format(printf, 2, 3)]] void add(const char* format, ...) {
        va_list args;
        va_start(args, format);
        const int n = std::vsnprintf(text_ + used_, sizeof text_ - used_, format, args);
        va_end(args);
        if (n > 0) used_ = std::min(sizeof text_ - 1, used_ + static_cast<std::size_t>(n));
    }
    std::string_view view() const { return {text_, used_}; }

private:
    char text_[512];
    std::size_t used_ = 0;
};

/// Validators and what the answer varies with: on every answer for this file.
void describe(const StaticFiles::File& file, const StaticOptions& options, HeaderLines& lines) {
    lines.add("Accept-Ranges: bytes\r\nETag: %.*s\r\n", static_cast<int>(file.etag().size()), file.etag().data());
    if (file.mtime >= 0) {
        char date[32];
        const std::string_view modified = format_http_date(file.mtime, date);
        lines.add("Last-Modified: %.*s\r\n", static_cast<int>(modified.size()), modified.data());
    }
    if (options.max_age_s >= 0) lines.add("Cache-Control: max-age=%d\r\n", options.max_age_s);
    if (file.has_variants) lines.add("Vary: Accept-Encoding\r\n");
    if (!file.content_encoding.empty())
        lines.add("Content-Encoding: %.*s\r\n", static_cast<int>(file.content_encoding.size()),
                  file.content_encoding.data());
}

/// The file the exchange asks for, from the loop's cache, or opened (and, when small, read and
/// kept): `bytes` holds it whole when it is in memory. Nothing, or the status of an answer sent
/// instead (404, 403, a redirect, 500).
std::optional<HttpStatus> find_file(const StaticFiles& www, Exchange& exchange, StaticCache* cache,
                                    StaticFiles::File& file, std::string& loaded, std::string_view& bytes) {
    const std::string_view accept_encoding = exchange.request.header("accept-encoding");
    const unsigned codings = accepted_codings(accept_encoding);
    const std::int64_t now = cache ? coarse_monotonic_now_ns() : 0;
    if (const StaticCache::Entry* hit = cache ? cache->find(exchange.path, codings, now) : nullptr) {
        file = StaticFiles::facts_of(hit->facts);
        bytes = hit->bytes;
        return std::nullopt;
    }
    const std::uint64_t generation = cache ? cache->generation() : 0;  // before the file is opened
    switch (www.open(exchange.path, file, accept_encoding)) {
    case StaticFiles::Outcome::found: break;
    case StaticFiles::Outcome::not_found: return exchange.error(HttpStatus::not_found);
    case StaticFiles::Outcome::forbidden: return exchange.error(HttpStatus::forbidden);
    case StaticFiles::Outcome::redirect_to_slash: return redirect_to_slash(exchange);
    }
    if (cache && cache->usable() && file.full_size <= StaticCache::kMaxFileBytes) {
        if (!StaticFiles::read_into(file, loaded)) {
            spdlog::error("static file {}: read failed", exchange.path);
            return exchange.error(HttpStatus::internal_server_error);
        }
        bytes = loaded;
        cache->store(exchange.path, codings, file, loaded, generation, now);
    }
    return std::nullopt;
}

/// One Range asked for, and If-Range holding: `file` narrowed to it (206, its Content-Range added),
/// or 416 for a range past the end (false: answered). Several ranges get the whole file (200).
bool narrow_to_range(Exchange& exchange, const Validators& validators, StaticFiles::File& file, HeaderLines& lines,
                     HttpStatus& status) {
    const HttpRequest& request = exchange.request;
    const std::string_view range = request.header("range");
    if (!range.data() || !if_range_holds(request, validators)) return true;
    const ByteRange wanted = parse_byte_range(range, file.full_size);
    if (wanted.kind == ByteRange::Kind::unsatisfiable) {
        lines.add("Content-Range: bytes */%zu\r\n", file.full_size);
        ResponseHead head = exchange.head(HttpStatus::range_not_satisfiable, "text/plain; charset=utf-8");
        head.extra_headers = lines.view();
        status = exchange.send(head, "416 Range Not Satisfiable\n");
        return false;
    }
    if (wanted.kind == ByteRange::Kind::single) {
        status = HttpStatus::partial_content;
        file.offset = static_cast<std::size_t>(wanted.first);
        file.size = static_cast<std::size_t>(wanted.last - wanted.first + 1);
        lines.add("Content-Range: bytes %llu-%llu/%zu\r\n", static_cast<unsigned long long>(wanted.first),
                  static_cast<unsigned long long>(wanted.last), file.full_size);
    }
    return true;
}

/// The head, then the body: from memory, read now, or (large) left in `body_file` to be sent
/// from the file after the head.
HttpStatus send_file(Exchange& exchange, StaticFiles::File& file, std::string_view bytes, HttpStatus status,
                     std::string_view header_lines, StaticFiles::File& body_file) {
    std::string& out = exchange.out();
    const std::size_t before = out.size();
    ResponseHead head = exchange.head(status, file.content_type);
    head.extra_headers = header_lines;
    append_head(out, head, file.size);
    if (exchange.request.head) return status;
    if (bytes.data()) {
        out.append(bytes.substr(file.offset, file.size));
        return status;
    }
    if (file.size >= kStreamFileBytes) {
        body_file = std::move(file);
        return status;
    }
    if (!StaticFiles::read_into(file, out)) {
        out.resize(before);
        spdlog::error("static file {}: read failed", exchange.path);
        return exchange.error(HttpStatus::internal_server_error);
    }
    return status;
}

}  // namespace

HttpStatus serve_static(const StaticFiles& www, Exchange& exchange, StaticFiles::File& body_file,
                        const StaticOptions& options, StaticCache* cache) {
    const HttpRequest& request = exchange.request;
    if (request.method != "GET" && !request.head) return exchange.method_not_allowed();
    if (has_unsafe_segment(exchange.path) || has_hidden_segment(exchange.path))
        return exchange.error(HttpStatus::not_found);
    StaticFiles::File file;
    std::string loaded;      // a small file read now, to keep
    std::string_view bytes;  // the whole file, when it is in memory (kept, or just read)
    if (const auto answered = find_file(www, exchange, cache, file, loaded, bytes)) return *answered;
    HeaderLines lines;
    describe(file, options, lines);
    const Validators validators{file.etag(), file.mtime};
    switch (evaluate_preconditions(request, validators)) {
    case Precondition::not_modified: {
        ResponseHead head = exchange.head(HttpStatus::not_modified, file.content_type);
        head.extra_headers = lines.view();
        return exchange.send(head, {});
    }
    case Precondition::failed: return exchange.error(HttpStatus::precondition_failed);
    case Precondition::proceed: break;
    }
    HttpStatus status = HttpStatus::ok;
    if (!narrow_to_range(exchange, validators, file, lines, status)) return status;
    return send_file(exchange, file, bytes, status, lines.view(), body_file);
}

}  // namespace cspd
