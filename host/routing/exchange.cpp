#include "routing/exchange.hpp"

namespace cspd {

Response Exchange::response(HttpStatus status, std::string_view content_type, std::string_view body) const {
    Response response;
    response.status = status;
    response.content_type = content_type;
    response.body = body;
    response.request_id = request_id_header;
    return response;
}

HttpStatus Exchange::send(const Response& response) {
    sink_.send(response, frame());
    return response.status;
}

HttpStatus Exchange::error(HttpStatus status) {
    if (status == HttpStatus::bad_request && keep_alive) close_after = true;
    return send(error_response(status, request_id_header));
}

HttpStatus Exchange::method_not_allowed() {
    static constexpr ResponseField allow[] = {{"Allow", "GET, HEAD"}};
    Response response = this->response(HttpStatus::method_not_allowed, "text/plain; charset=utf-8",
                                       "405 Method Not Allowed\n");
    response.fields = allow;
    return send(response);
}

}  // namespace cspd
