#include "routing/exchange.hpp"

namespace cspd {

ResponseHead Exchange::head(HttpStatus status, std::string_view content_type) const {
    ResponseHead head;
    head.status = status;
    head.content_type = content_type;
    head.date = date_.now();
    head.request_id = request_id_header;
    head.keep_alive = keep_alive && !close_after;
    head.http10 = http10;
    head.head_only = request.head;
    return head;
}

HttpStatus Exchange::send(const ResponseHead& head, std::string_view body) {
    append_response(out_, head, body);
    return head.status;
}

HttpStatus Exchange::error(HttpStatus status) {
    if (status == HttpStatus::bad_request && keep_alive) close_after = true;
    append_error(out_, status, date_.now(), keep_alive && !close_after, http10, request.head, request_id_header);
    return status;
}

HttpStatus Exchange::method_not_allowed() {
    ResponseHead head = this->head(HttpStatus::method_not_allowed, "text/plain; charset=utf-8");
    head.extra_headers = "Allow: GET, HEAD\r\n";
    return send(head, "405 Method Not Allowed\n");
}

}  // namespace cspd
