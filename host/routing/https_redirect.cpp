#include "routing/https_redirect.hpp"

#include "common/ascii.hpp"
#include "http/uri.hpp"

#include <string>

namespace cspd {

HttpStatus redirect_to_https(Exchange& exchange, unsigned short tls_port) {
    // The host without its port: "[::1]:8080" keeps "[::1]", "example.com:8080" is "example.com".
    std::string_view host = trim_ows(exchange.request.header("host"));
    const std::size_t bracket = host.rfind(']');
    const std::size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket))
        host = host.substr(0, colon);
    if (host.empty()) return exchange.error(HttpStatus::bad_request);  // HTTP/1.0 without Host: nowhere to send it
    const SplitTarget target = split_target(without_scheme_and_authority(exchange.request.target));
    std::string location = "https://";
    location.append(host);
    if (tls_port != 443) location.append(":").append(std::to_string(tls_port));
    location.append(target.path.empty() ? "/" : target.path);
    if (!target.query.empty()) location.append("?").append(target.query);
    const ResponseField fields[] = {{"Location", location}};
    Response response = exchange.response(HttpStatus{308}, "text/plain; charset=utf-8", "308 Permanent Redirect\n");
    response.fields = fields;
    return exchange.send(response);
}

}  // namespace cspd
