#include "http/response.hpp"

#include <array>
#include <charconv>
#include <string>

namespace cspd {

Response error_response(HttpStatus status, std::string_view request_id) {
    // "404 Not Found\n" for every code, made once.
    constexpr unsigned kFirst = 100, kLast = 599;
    static const std::array<std::string, kLast - kFirst + 1> bodies = [] {
        std::array<std::string, kLast - kFirst + 1> made;
        for (unsigned c = kFirst; c <= kLast; ++c)
            made[c - kFirst] = std::to_string(c) + " " + std::string(reason_phrase(HttpStatus(c))) + "\n";
        return made;
    }();
    Response response;
    response.status = status;
    response.content_type = "text/plain; charset=utf-8";
    const unsigned c = code(status);
    response.body = c >= kFirst && c <= kLast ? std::string_view(bodies[c - kFirst]) : std::string_view("error\n");
    response.request_id = request_id;
    return response;
}

}  // namespace cspd
