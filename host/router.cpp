#include "router.hpp"

#include "http_response.hpp"
#include "uri.hpp"

#include <spdlog/spdlog.h>

namespace cspd {
namespace {
constexpr std::string_view kHandlerPrefix = "/csp/";
} // namespace

struct Router::Context {
    const HttpRequest& request;
    const ClientInfo& client;
    bool keep_alive;
    bool http10;
    std::string_view path;  // decoded
};

Router::Router(const HandlerTable& handlers, const StaticFiles& www, DateCache& date)
    : handlers_(handlers), www_(www), date_(date) {}

void Router::respond(const HttpRequest& request, const ClientInfo& client, bool keep_alive, std::string& out,
                     StaticFiles::File& body_file) {
    const bool http10 = request.http_major == 1 && request.http_minor == 0;
    SplitTarget target = split_target(request.target);
    decoded_path_.clear();
    Context ctx{request, client, keep_alive, http10, {}};
    // Only origin-form ("/path") is served; absolute-form and '*' are not ours.
    if (target.path.empty() || target.path.front() != '/' || !percent_decode(target.path, decoded_path_, false)) {
        error(ctx, 400, out);
        return;
    }
    ctx.path = decoded_path_;

    if (ctx.path.starts_with(kHandlerPrefix)) {
        std::string_view name = ctx.path.substr(kHandlerPrefix.size());
        const HandlerVersion* handler = is_valid_handler_name(name) ? handlers_.find(name) : nullptr;
        if (!handler) {
            error(ctx, 404, out);
            return;
        }
        run_handler(*handler, ctx, target.query, out);
        return;
    }
    serve_static(ctx, out, body_file);
}

void Router::run_handler(const HandlerVersion& handler, const Context& ctx, std::string_view query,
                         std::string& out) {
    reply_.reset();
    view_.bind(ctx.request, ctx.path, query, ctx.client.address, ctx.client.port, handler.state());
    int status;
    try {
        status = handler.handle(view_.raw(), reply_.raw());
    } catch (const std::exception& e) {
        spdlog::error("handler {}: threw on {} {}: {}", handler.describe(), ctx.request.method, ctx.path, e.what());
        error(ctx, 500, out);
        return;
    } catch (...) {
        spdlog::error("handler {}: threw a non-std exception on {} {}", handler.describe(), ctx.request.method,
                      ctx.path);
        error(ctx, 500, out);
        return;
    }
    if (status < 200 || status > 599) {
        spdlog::error("handler {}: returned invalid HTTP status {}", handler.describe(), status);
        error(ctx, 500, out);
        return;
    }
    ResponseHead head;
    head.status = status;
    head.content_type = reply_.content_type();
    head.extra_headers = reply_.extra_headers();
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    head.head_only = ctx.request.head;
    append_response(out, head, reply_.body());
}

void Router::serve_static(const Context& ctx, std::string& out, StaticFiles::File& body_file) {
    if (ctx.request.method != "GET" && !ctx.request.head) {
        ResponseHead head;
        head.status = 405;
        head.content_type = "text/plain; charset=utf-8";
        head.extra_headers = "Allow: GET, HEAD\r\n";
        head.date = date_.now();
        head.keep_alive = ctx.keep_alive;
        head.http10 = ctx.http10;
        append_response(out, head, "405 Method Not Allowed\n");
        return;
    }
    if (has_unsafe_segment(ctx.path) || has_hidden_segment(ctx.path)) {
        error(ctx, 404, out);
        return;
    }
    StaticFiles::File file;
    switch (www_.open(ctx.path, file)) {
    case StaticFiles::Outcome::found:
        break;
    case StaticFiles::Outcome::not_found:
        error(ctx, 404, out);
        return;
    case StaticFiles::Outcome::forbidden:
        error(ctx, 403, out);
        return;
    case StaticFiles::Outcome::redirect_to_slash: {
        // Location is built from the raw target's path so that encoding survives; leading slashes
        // collapse to one, or "//host/" would send the browser to another site.
        std::string_view raw = split_target(ctx.request.target).path;
        raw.remove_prefix(std::min(raw.find_first_not_of('/'), raw.size()));
        std::string location = "Location: /";
        location.append(raw).append("/\r\n");
        ResponseHead head;
        head.status = 301;
        head.content_type = "text/plain; charset=utf-8";
        head.extra_headers = location;
        head.date = date_.now();
        head.keep_alive = ctx.keep_alive;
        head.http10 = ctx.http10;
        head.head_only = ctx.request.head;
        append_response(out, head, "301 Moved Permanently\n");
        return;
    }
    }
    ResponseHead head;
    head.status = 200;
    head.content_type = file.content_type;
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    const std::size_t before = out.size();
    append_head(out, head, file.size);
    if (ctx.request.head) return;
    if (file.size >= kStreamFileBytes) {
        body_file = std::move(file);
        return;
    }
    if (!StaticFiles::read_into(file, out)) {
        out.resize(before);
        spdlog::error("static file {}: read failed", ctx.path);
        error(ctx, 500, out);
    }
}

void Router::error(const Context& ctx, int status, std::string& out) {
    append_error(out, status, date_.now(), ctx.keep_alive, ctx.http10, ctx.request.head);
}

} // namespace cspd
