#include "routing/handler_answer.hpp"

#include "compression/compression_policy.hpp"
#include "routing/answer_compression.hpp"
#include "routing/handler_preconditions.hpp"
#include "stats/shared_stats.hpp"

namespace cspd {

CallStatus send_handler_answer(const HandlerAnswer& answer, const HttpRequest& request, const ResponseFrame& frame,
                               std::string_view request_id, HandlerStats* stats, ResponseSink& sink) {
    if (!frame.request_id_header) request_id = {};
    HttpStatus sent = answer.status;
    if (sent == HttpStatus::ok) {
        // The handler gave validators: conditional requests are answered here, as for static files.
        switch (handler_precondition(request, answer.fields)) {
        case Precondition::proceed: break;
        case Precondition::not_modified: sent = HttpStatus::not_modified; break;
        case Precondition::failed: sent = HttpStatus::precondition_failed; break;
        }
    }
    if (stats) bump(stats->requests[status_class(code(sent))]);
    if (sent == HttpStatus::precondition_failed && answer.status == HttpStatus::ok) {
        sink.send(error_response(sent, request_id), frame);
        return {answer.status, sent};
    }
    Response response;
    response.status = answer.status;
    response.content_type = answer.content_type;
    response.fields = answer.fields;
    response.body = answer.body;
    response.request_id = request_id;
    // Compressed here, for every way an answer comes; a 304 says what its 200 would have. An
    // answer below the minimum size (hello's) costs a comparison.
    if (answer.compress && frame.compression && answer.body.size() >= frame.compression->min_size) {
        thread_local EncodedAnswer encoded;
        encode_answer(response, request, frame, encoded, sent == HttpStatus::not_modified, answer.encoded);
        response.status = sent;
        sink.send(response, frame);
        if (encoded.body.capacity() > (std::size_t(1) << 20)) std::string().swap(encoded.body);  // a rare giant
        return {answer.status, sent};
    }
    response.status = sent;
    sink.send(response, frame);
    return {answer.status, sent};
}

}  // namespace cspd
