#include "routing/answer_compression.hpp"

#include "common/ascii.hpp"
#include "compression/accept_encoding.hpp"
#include "compression/body_encoder.hpp"
#include "compression/compression_policy.hpp"

namespace cspd {
namespace {

/// Whether the comma-separated list `value` holds `token` (any case).
bool lists(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (iequals(item, token)) return true;
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    }
    return false;
}

/// Whether the answer's own fields keep it as it is: already encoded, or no-transform (RFC 9111 §5.2.2.6).
bool left_as_is(std::span<const ResponseField> fields) {
    for (const ResponseField& field : fields) {
        if (iequals(field.name, "Content-Encoding")) return true;
        if (iequals(field.name, "Cache-Control") && lists(field.value, "no-transform")) return true;
    }
    return false;
}

/// The coding `response` goes in for `request`, or none if it is not one that may be compressed
/// (then it does not vary with Accept-Encoding either).
std::optional<ContentCoding> answer_coding(const Response& response, const HttpRequest& request,
                                           const CompressionPolicy* policy) {
    // Cheapest tests first: a small answer (hello's) costs a comparison or two.
    if (!policy || (response.body_kind == BodyKind::bytes && response.body.size() < policy->min_size) ||
        response.body_kind == BodyKind::file || !policy->on() || !response.sends_body() ||
        response.status == HttpStatus::partial_content || !policy->compressible_type(response.content_type) ||
        left_as_is(response.fields))
        return std::nullopt;
    return choose_coding(accept_encoding_of(request), policy->encodings);
}

/// `fields` as an answer that varies with Accept-Encoding says them, `encoded` in `coding` or not:
/// Vary merged, a strong ETag weakened, Content-Encoding added (not to a 304, `not_modified`: it
/// would relabel the variant a cache holds, RFC 9111 §4.3.4). Views into `fields` and `into`.
void rewrite_fields(std::span<const ResponseField> fields, ContentCoding coding, bool encoded, bool not_modified,
                    EncodedAnswer& into) {
    into.fields.clear();
    // Vary says Accept-Encoding once: added to the handler's first Vary unless one says it (or *).
    bool varies = false;
    for (const ResponseField& field : fields)
        if (iequals(field.name, "Vary") && (lists(field.value, "*") || lists(field.value, "Accept-Encoding")))
            varies = true;
    bool weakened = false;  // one ETag, as there should be (a second is passed on as it is)
    for (const ResponseField& field : fields) {
        if (!varies && iequals(field.name, "Vary")) {
            varies = true;
            into.vary.assign(field.value).append(", Accept-Encoding");
            into.fields.push_back({field.name, into.vary});
        } else if (encoded && !weakened && iequals(field.name, "ETag") && field.value.starts_with('"')) {
            weakened = true;
            into.etag.assign("W/").append(field.value);  // another representation: not byte-equal
            into.fields.push_back({field.name, into.etag});
        } else {
            into.fields.push_back(field);
        }
    }
    if (!varies) into.fields.push_back({"Vary", "Accept-Encoding"});
    if (encoded && !not_modified) into.fields.push_back({"Content-Encoding", coding_name(coding)});
}

}  // namespace

std::optional<std::string_view> accept_encoding_of(const HttpRequest& request) {
    // Several lines are one list (RFC 9110 §5.3): joined, in this thread's buffer, when there are.
    thread_local std::string joined;
    std::optional<std::string_view> found;
    bool several = false;
    for (const HttpHeader& header : request.headers) {
        if (!iequals(header.name, "Accept-Encoding")) continue;
        if (!found) {
            found = header.value;
            continue;
        }
        if (!several) joined.assign(*found);
        several = true;
        joined.append(", ").append(header.value);
    }
    if (several) found = joined;
    return found;
}

void encode_answer(Response& response, const HttpRequest& request, const ResponseFrame& frame, EncodedAnswer& into,
                   bool fields_only, EncodedBodies* kept) {
    if (response.body_kind != BodyKind::bytes) return;
    const std::optional<ContentCoding> chosen = answer_coding(response, request, frame.compression);
    if (!chosen) return;
    const ContentCoding coding = *chosen;
    bool compressed = false;
    std::string_view body;
    std::size_t bytes_in = 0, bytes_out = 0;
    if (coding != ContentCoding::identity && !fields_only) {
        std::string* earlier = kept ? &kept->by_coding[static_cast<std::size_t>(coding)] : nullptr;
        if (earlier && !earlier->empty()) {
            compressed = true;
            body = *earlier;
        } else {
            compressed = encode_whole(coding, response.body, into.body);
            if (!compressed) into.body.clear();  // no memory for the coder: sent as it is
            body = into.body;
            if (compressed) {
                bytes_in = response.body.size();
                bytes_out = into.body.size();
            }
            if (compressed && earlier) {
                try {
                    earlier->assign(into.body);
                    kept->bytes += earlier->size();
                } catch (const std::bad_alloc&) {
                    // Sent all the same; the next hit compresses again.
                }
            }
        }
    }
    rewrite_fields(response.fields, coding, fields_only ? coding != ContentCoding::identity : compressed, fields_only,
                   into);
    response.fields = into.fields;
    if (compressed) {
        response.body = body;  // a HEAD's too: its Content-Length is the GET's
        if (!frame.head_only) frame.compression->counters.count(coding, bytes_in, bytes_out);
    }
}

ContentCoding encode_stream_head(const Response& head, const HttpRequest& request, const ResponseFrame& frame,
                                 ResponseFields& fields) {
    const std::optional<ContentCoding> chosen = answer_coding(head, request, frame.compression);
    if (!chosen) return ContentCoding::identity;
    EncodedAnswer rewritten;
    rewrite_fields(head.fields, *chosen, *chosen != ContentCoding::identity, false, rewritten);
    ResponseFields replaced;
    for (const ResponseField& field : rewritten.fields) replaced.add(field.name, field.value);
    fields = std::move(replaced);
    return *chosen;
}

}  // namespace cspd
