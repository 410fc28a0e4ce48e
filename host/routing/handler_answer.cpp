#include "routing/handler_answer.hpp"

#include "http/response.hpp"
#include "routing/handler_preconditions.hpp"
#include "stats/shared_stats.hpp"

namespace cspd {

CallStatus send_handler_answer(const HandlerAnswer& answer, const HttpRequest& request, const ResponseFrame& frame,
                               std::string_view request_id, HandlerStats* stats, DateCache& date, std::string& out) {
    if (!frame.request_id_header) request_id = {};
    HttpStatus sent = answer.status;
    if (sent == HttpStatus::ok) {
        // The handler gave validators: conditional requests are answered here, as for static files.
        switch (handler_precondition(request, answer.extra_headers)) {
        case Precondition::proceed: break;
        case Precondition::not_modified: sent = HttpStatus::not_modified; break;
        case Precondition::failed: sent = HttpStatus::precondition_failed; break;
        }
    }
    if (stats) bump(stats->requests[status_class(code(sent))]);
    if (sent == HttpStatus::precondition_failed && answer.status == HttpStatus::ok) {
        append_error(out, sent, date.now(), frame.keep_alive, frame.http10, frame.head_only, request_id);
        return {answer.status, sent};
    }
    ResponseHead head;
    head.status = sent;
    head.content_type = answer.content_type;
    head.extra_headers = answer.extra_headers;
    head.date = date.now();
    head.request_id = request_id;
    head.keep_alive = frame.keep_alive;
    head.http10 = frame.http10;
    head.head_only = frame.head_only;
    append_response(out, head, answer.body);
    return {answer.status, sent};
}

}  // namespace cspd
