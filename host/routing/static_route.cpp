#include "routing/static_route.hpp"

#include "http/uri.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cspd {

HttpStatus serve_static(const StaticFiles& www, Exchange& exchange, StaticFiles::File& body_file) {
    const HttpRequest& request = exchange.request;
    if (request.method != "GET" && !request.head) return exchange.method_not_allowed();
    if (has_unsafe_segment(exchange.path) || has_hidden_segment(exchange.path))
        return exchange.error(HttpStatus::not_found);
    StaticFiles::File file;
    switch (www.open(exchange.path, file)) {
    case StaticFiles::Outcome::found: break;
    case StaticFiles::Outcome::not_found: return exchange.error(HttpStatus::not_found);
    case StaticFiles::Outcome::forbidden: return exchange.error(HttpStatus::forbidden);
    case StaticFiles::Outcome::redirect_to_slash: {
        // Location is built from the raw target's path so that encoding survives; leading slashes
        // collapse to one, or "//host/" would send the browser to another site.
        std::string_view raw = split_target(without_scheme_and_authority(request.target)).path;
        raw.remove_prefix(std::min(raw.find_first_not_of('/'), raw.size()));
        std::string location = "Location: /";
        location.append(raw).append("/\r\n");
        ResponseHead head = exchange.head(HttpStatus::moved_permanently, "text/plain; charset=utf-8");
        head.extra_headers = location;
        return exchange.send(head, "301 Moved Permanently\n");
    }
    }
    std::string& out = exchange.out();
    const std::size_t before = out.size();
    append_head(out, exchange.head(HttpStatus::ok, file.content_type), file.size);
    if (request.head) return HttpStatus::ok;
    if (file.size >= kStreamFileBytes) {
        body_file = std::move(file);
        return HttpStatus::ok;
    }
    if (!StaticFiles::read_into(file, out)) {
        out.resize(before);
        spdlog::error("static file {}: read failed", exchange.path);
        return exchange.error(HttpStatus::internal_server_error);
    }
    return HttpStatus::ok;
}

}  // namespace cspd
