// An answer's body compressed after its handler and before its framing, in one place for every
// protocol: the coding the request's Accept-Encoding and --compress-encodings agree on, for the
// answers --compress-types and --compress-min-size take, never for 206, a body that already has
// a Content-Encoding or one that says Cache-Control: no-transform. What such an answer says
// varies with Accept-Encoding, so it says Vary: Accept-Encoding whether compressed or not; a
// compressed one has its strong ETag made weak (W/), which If-None-Match still matches.
#pragma once

#include "http/request.hpp"
#include "compression/content_coding.hpp"
#include "http/response.hpp"

#include "http/response_fields.hpp"

#include <array>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace cspd {

/// What an encoded answer's views point into; reused from answer to answer.
struct EncodedAnswer {
    std::string body;
    std::vector<ResponseField> fields;
    std::string vary, etag;
};

/// A body's compressed forms, by ContentCoding (identity's stays empty): a cached reply keeps
/// them so that a hit never compresses again.
struct EncodedBodies {
    std::array<std::string, 4> by_coding;
    std::size_t bytes = 0;  ///< what they hold
};

/// Encodes `response` (whose body is bytes, the resource's whole answer) for `request` as
/// `frame.compression` says: its fields and body may then be views into `into`. `fields_only`:
/// the body will not be sent (a 304 for it): only the fields change, as they would for the body.
/// `kept`: a cached reply's compressed bodies: the one wanted is used if there, else made and kept
/// (`kept->bytes` grows by it). What is sent compressed is counted in the policy's counters.
void encode_answer(Response& response, const HttpRequest& request, const ResponseFrame& frame,
                          EncodedAnswer& into, bool fields_only = false, EncodedBodies* kept = nullptr);

/// The request's Accept-Encoding, its lines joined if it has several (the view lives until the
/// next call on this thread); none if it has none.
std::optional<std::string_view> accept_encoding_of(const HttpRequest& request);

/// A streamed answer's coding (a stream's length is unknown: compressed whatever its size), and the
/// fields its head says, written into `fields` (`head.fields` may view them). Identity if it is
/// not compressed, for this client or at all. A HEAD gets the fields its GET would.
ContentCoding encode_stream_head(const Response& head, const HttpRequest& request, const ResponseFrame& frame,
                                 ResponseFields& fields);

}  // namespace cspd
