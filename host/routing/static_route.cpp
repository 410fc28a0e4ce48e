#include "routing/static_route.hpp"

#include "compression/accept_encoding.hpp"
#include "compression/body_encoder.hpp"
#include "compression/compression_policy.hpp"
#include "http/byte_range.hpp"
#include "http/http_date.hpp"
#include "http/preconditions.hpp"
#include "http/uri.hpp"
#include "common/clocks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <iterator>
#include <optional>
#include <span>
#include <string>

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
    std::string location = "/";
    location.append(raw).append("/");
    if (!target.query.empty()) location.append("?").append(target.query);
    const ResponseField fields[] = {{"Location", location}};
    Response response =
        exchange.response(HttpStatus::moved_permanently, "text/plain; charset=utf-8", "301 Moved Permanently\n");
    response.fields = fields;
    return exchange.send(response);
}

/// The fields of a file's answer, their values written into a fixed buffer (no allocation).
class FileFields {
public:
    [[gnu::format(printf, 3, 4)]] void add(std::string_view name, const char* format, ...) {
        if (count_ == std::size(fields_)) return;
        va_list args;
        va_start(args, format);
        const int n = std::vsnprintf(text_ + used_, sizeof text_ - used_, format, args);
        va_end(args);
        if (n < 0 || used_ + static_cast<std::size_t>(n) >= sizeof text_) return;  // never: the values are short
        fields_[count_++] = {name, std::string_view(text_ + used_, static_cast<std::size_t>(n))};
        used_ += static_cast<std::size_t>(n);
    }
    std::span<const ResponseField> list() const { return {fields_, count_}; }

private:
    ResponseField fields_[8];
    std::size_t count_ = 0;
    char text_[512];
    std::size_t used_ = 0;
};

/// How a file goes: compressed on the fly or not, and whether that depends on Accept-Encoding.
struct FileCoding {
    bool varies = false;  ///< compressible, no sidecar: it says Vary: Accept-Encoding
    ContentCoding coding = ContentCoding::identity;
};

FileCoding file_coding(const StaticFiles::File& file, const HttpRequest& request, const StaticCompression* compression) {
    const CompressionPolicy* policy = compression ? compression->policy : nullptr;
    if (!policy || !policy->on() || !file.content_encoding.empty() || file.has_variants ||
        file.full_size < policy->min_size || file.full_size > CompressedFiles::kMaxFileBytes ||
        !policy->compressible_type(file.content_type))
        return {};
    if (request.header("range").data()) return {true, ContentCoding::identity};  // a 206 goes as it is
    return {true, choose_coding(accept_encoding_of(request), policy->encodings)};
}

/// Validators and what the answer varies with: on every answer for this file.
void describe(const StaticFiles::File& file, const StaticOptions& options, const FileCoding& how, FileFields& fields) {
    fields.add("Accept-Ranges", "bytes");
    if (how.coding != ContentCoding::identity)  // another representation: a weak validator
        fields.add("ETag", "W/%.*s", static_cast<int>(file.etag().size()), file.etag().data());
    else
        fields.add("ETag", "%.*s", static_cast<int>(file.etag().size()), file.etag().data());
    if (file.mtime >= 0) {
        char date[32];
        const std::string_view modified = format_http_date(file.mtime, date);
        fields.add("Last-Modified", "%.*s", static_cast<int>(modified.size()), modified.data());
    }
    if (options.max_age_s >= 0) fields.add("Cache-Control", "max-age=%d", options.max_age_s);
    if (file.has_variants || how.varies) fields.add("Vary", "Accept-Encoding");
    if (!file.content_encoding.empty())
        fields.add("Content-Encoding", "%.*s", static_cast<int>(file.content_encoding.size()),
                   file.content_encoding.data());
    if (how.coding != ContentCoding::identity) {
        const std::string_view name = coding_name(how.coding);
        fields.add("Content-Encoding", "%.*s", static_cast<int>(name.size()), name.data());
    }
}

/// The file compressed in `coding`: kept from an earlier answer, or made now from `bytes` (the
/// whole file, when in memory) or a read into `scratch`. Empty (data() null) if it cannot be.
std::string_view compressed_body(const StaticFiles::File& file, std::string_view bytes, ContentCoding coding, bool head,
                                 StaticCompression& compression, std::string& scratch, std::string& spare) {
    const CompressedFiles::Identity identity{file.device, file.inode,    file.full_size,
                                             file.mtime_ns, file.ctime_ns, coding};
    const CompressionCounters& counters = compression.policy->counters;
    if (compression.kept)
        if (const std::string_view kept = compression.kept->find(identity); kept.data()) {
            if (!head) counters.count(coding, 0, 0);
            return kept;
        }
    if (!bytes.data()) {
        scratch.clear();
        if (!StaticFiles::read_into(file, scratch) || scratch.size() != file.full_size) return {};
        bytes = scratch;
    }
    std::string encoded;
    if (!encode_whole(coding, bytes, encoded)) return {};
    if (!head) counters.count(coding, bytes.size(), encoded.size());  // a HEAD compresses for its length alone
    if (!compression.kept) {
        spare = std::move(encoded);
        return spare;
    }
    return compression.kept->store(identity, std::move(encoded), spare);
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
bool narrow_to_range(Exchange& exchange, const Validators& validators, StaticFiles::File& file, FileFields& fields,
                     HttpStatus& status) {
    const HttpRequest& request = exchange.request;
    const std::string_view range = request.header("range");
    if (!range.data() || !if_range_holds(request, validators)) return true;
    const ByteRange wanted = parse_byte_range(range, file.full_size);
    if (wanted.kind == ByteRange::Kind::unsatisfiable) {
        fields.add("Content-Range", "bytes */%zu", file.full_size);
        Response response = exchange.response(HttpStatus::range_not_satisfiable, "text/plain; charset=utf-8",
                                              "416 Range Not Satisfiable\n");
        response.fields = fields.list();
        status = exchange.send(response);
        return false;
    }
    if (wanted.kind == ByteRange::Kind::single) {
        status = HttpStatus::partial_content;
        file.offset = static_cast<std::size_t>(wanted.first);
        file.size = static_cast<std::size_t>(wanted.last - wanted.first + 1);
        fields.add("Content-Range", "bytes %llu-%llu/%zu", static_cast<unsigned long long>(wanted.first),
                   static_cast<unsigned long long>(wanted.last), file.full_size);
    }
    return true;
}

/// The answer: its body from memory, read now (into `scratch`), or (large) left in `body_file`
/// to be sent from the file after the head.
HttpStatus send_file(Exchange& exchange, StaticFiles::File& file, std::string_view bytes, HttpStatus status,
                     std::span<const ResponseField> fields, StaticFiles::File& body_file, std::string& scratch) {
    Response response = exchange.response(status, file.content_type);
    response.fields = fields;
    if (exchange.request.head) {
        response.body_kind = BodyKind::file;  // its length, and nothing read
        response.file_size = file.size;
    } else if (bytes.data()) {
        response.body = bytes.substr(file.offset, file.size);
    } else if (file.size >= kStreamFileBytes) {
        response.body_kind = BodyKind::file;
        response.file_size = file.size;
        body_file = std::move(file);
    } else {
        scratch.clear();
        if (!StaticFiles::read_into(file, scratch)) {
            spdlog::error("static file {}: read failed", exchange.path);
            return exchange.error(HttpStatus::internal_server_error);
        }
        response.body = scratch;
    }
    return exchange.send(response);
}

}  // namespace

HttpStatus serve_static(const StaticFiles& www, Exchange& exchange, StaticFiles::File& body_file,
                        const StaticOptions& options, StaticCache* cache, std::string* scratch,
                        StaticCompression* compression) {
    const HttpRequest& request = exchange.request;
    if (request.method != "GET" && !request.head) return exchange.method_not_allowed();
    if (has_unsafe_segment(exchange.path) || has_hidden_segment(exchange.path))
        return exchange.error(HttpStatus::not_found);
    StaticFiles::File file;
    std::string loaded;      // a small file read now, to keep
    std::string_view bytes;  // the whole file, when it is in memory (kept, or just read)
    if (const auto answered = find_file(www, exchange, cache, file, loaded, bytes)) return *answered;
    FileCoding how = file_coding(file, request, compression);
    FileFields fields;
    describe(file, options, how, fields);
    const Validators validators{file.etag(), file.mtime};
    switch (evaluate_preconditions(request, validators)) {
    case Precondition::not_modified: {
        Response response = exchange.response(HttpStatus::not_modified, file.content_type);
        response.fields = fields.list();
        return exchange.send(response);
    }
    case Precondition::failed: return exchange.error(HttpStatus::precondition_failed);
    case Precondition::proceed: break;
    }
    HttpStatus status = HttpStatus::ok;
    if (!narrow_to_range(exchange, validators, file, fields, status)) return status;
    std::string own;  // without the caller's scratch
    if (how.coding != ContentCoding::identity) {
        std::string spare;  // a body too large to keep
        const std::string_view body =
            compressed_body(file, bytes, how.coding, request.head, *compression, scratch ? *scratch : own, spare);
        if (body.data()) {
            Response response = exchange.response(status, file.content_type, body);
            response.fields = fields.list();
            return exchange.send(response);
        }
        spdlog::warn("static file {}: could not be compressed ({}); sent as it is", exchange.path,
                     coding_name(how.coding));
        how.coding = ContentCoding::identity;
        fields = FileFields{};
        describe(file, options, how, fields);
    }
    return send_file(exchange, file, bytes, status, fields.list(), body_file, scratch ? *scratch : own);
}

}  // namespace cspd
