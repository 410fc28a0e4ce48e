// How a handler's answer is sent, whether its call just returned, finished later, or the
// reply cache kept it: one path, so a conditional request gets the same 304 or 412 and the
// handler's counters the same status, whichever way the answer came.
#pragma once

#include "http/request.hpp"
#include "http/response.hpp"
#include "http/status.hpp"
#include "routing/answer_compression.hpp"

#include <span>
#include <string_view>

namespace cspd {

struct HandlerStats;

/// An answer's two statuses: what its handler returned (the resource's answer, which a reply
/// cache may keep) and what was sent (the same, or a 304 or 412 the host answered for it, or
/// 500 for a call that failed).
struct CallStatus {
    HttpStatus returned = HttpStatus::ok;
    HttpStatus sent = HttpStatus::ok;
};

/// What a handler answered: its status and the parts of its reply.
struct HandlerAnswer {
    HttpStatus status = HttpStatus::ok;
    std::string_view content_type;
    std::span<const ResponseField> fields;
    std::string_view body;
    bool compress = true;  ///< false: the handler said CSP_COMPRESS_OFF
    EncodedBodies* encoded = nullptr;  ///< a cached reply's compressed bodies (used, or filled)
};

/// Sends `answer` to `sink` as the response to `request`: a 200 whose validators match the
/// request's conditions becomes a 304 (no body) or a 412. The status sent is counted in
/// `stats` (the handler's, or null). `request_id`: sent as X-Request-Id when the frame says so.
CallStatus send_handler_answer(const HandlerAnswer& answer, const HttpRequest& request, const ResponseFrame& frame,
                               std::string_view request_id, HandlerStats* stats, ResponseSink& sink);

}  // namespace cspd
