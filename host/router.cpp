#include "router.hpp"

#include "crash_reporter.hpp"
#include "cycle_clock.hpp"
#include "http_response.hpp"
#include "shared_stats.hpp"
#include "status_report.hpp"
#include "uri.hpp"

#include <spdlog/spdlog.h>

namespace cspd {
namespace {
constexpr std::string_view kHandlerPrefix = "/csp/";

/// RFC 3986 allows no spaces, tabs or other control bytes in a URI.
bool has_control_bytes(std::string_view target) {
    for (char c : target) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7f) return true;
    }
    return false;
}

bool has_single_host(const HttpRequest& request) {
    int hosts = 0;
    for (const auto& h : request.headers)
        if (h.name.size() == 4 && iequals(h.name, "host")) ++hosts;
    return hosts == 1;
}
} // namespace

struct Router::Context {
    const HttpRequest& request;
    const ClientInfo& client;
    bool keep_alive;
    bool http10;
    std::string_view path;  // decoded
};

Router::Router(const HandlerTable& handlers, const StaticFiles& www, DateCache& date, bool probes,
               const bool* draining)
    : handlers_(handlers), www_(www), date_(date), probes_(probes), draining_(draining) {}

void Router::attach_stats(SharedStats& shared, LoopSlot& slot, bool endpoints, unsigned retry_after_s,
                          bool on_status_port_only) {
    status_port_only_ = on_status_port_only;
    shared_ = &shared;
    slot_ = &slot;
    status_endpoints_ = endpoints;
    retry_after_s_ = retry_after_s;
    CycleClock::calibrate();
}

int Router::respond(const HttpRequest& request, const ClientInfo& client, bool keep_alive, std::string& out,
                    StaticFiles::File& body_file) {
    const int status = route(request, client, keep_alive, out, body_file);
    if (slot_) bump(slot_->requests[status_class(status)]);
    return status;
}

int Router::route(const HttpRequest& request, const ClientInfo& client, bool keep_alive, std::string& out,
                  StaticFiles::File& body_file) {
    const bool http10 = request.http_major == 1 && request.http_minor == 0;
    close_after_ = false;
    Context ctx{request, client, keep_alive, http10, {}};
    // RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host.
    if (!http10 && !has_single_host(request)) {
        return error(ctx, 400, out);
    }
    // Origin-form ("/path"), or absolute-form ("http://host/path"), which a server must accept
    // (RFC 9112 §3.2.2); asterisk- and authority-form are not for this server.
    const std::string_view origin = without_scheme_and_authority(request.target);
    SplitTarget target = split_target(origin);
    if (target.path.empty() && origin.size() != request.target.size()) target.path = "/";  // "http://host?q"
    if (target.path.empty() || target.path.front() != '/' || has_control_bytes(request.target)) {
        return error(ctx, 400, out);
    }
    if (target.path.find('%') == std::string_view::npos) {
        ctx.path = target.path;  // nothing to decode: no copy
    } else {
        decoded_path_.clear();
        if (!percent_decode(target.path, decoded_path_, false)) {
            return error(ctx, 400, out);
        }
        ctx.path = decoded_path_;
    }

    // The status address is for operators: probes, /-/status and /metrics, nothing else.
    if (client.status_port && ctx.path != "/metrics" && !ctx.path.starts_with("/-/")) return error(ctx, 404, out);
    if (ctx.path.starts_with(kHandlerPrefix)) {
        std::string_view name = ctx.path.substr(kHandlerPrefix.size());
        const HandlerTable::Entry* handler = is_valid_handler_name(name) ? handlers_.find_entry(name) : nullptr;
        if (!handler) {
            return error(ctx, 404, out);
        }
        if (shared_ && shared_->quarantine_count.load(std::memory_order_relaxed) != 0) {
            const HandlerFileIdentity& file = handler->version->file();
            if (is_quarantined(*shared_, name, file.size, file.content_hash)) return serve_quarantined(ctx, out);
        }
        return run_handler(*handler, ctx, target.query, out);
    }
    if (probes_ && ctx.path.starts_with("/-/")) {
        if (ctx.path == "/-/healthy") return serve_probe(ctx, false, out);
        if (ctx.path == "/-/ready") return serve_probe(ctx, true, out);
    }
    if (status_endpoints_ && (!status_port_only_ || client.status_port)) {
        if (ctx.path == "/metrics") return serve_report(ctx, true, out);
        if (ctx.path == "/-/status") return serve_report(ctx, false, out);
    }
    return serve_static(ctx, out, body_file);
}

int Router::serve_probe(const Context& ctx, bool ready_probe, std::string& out) {
    // healthy: the process answers. ready: it also takes new work (not draining).
    const bool draining = draining_ && *draining_;
    const int status = ready_probe && draining ? 503 : 200;
    ResponseHead head;
    head.status = status;
    head.content_type = "text/plain; charset=utf-8";
    head.extra_headers = "Cache-Control: no-store\r\n";
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    head.head_only = ctx.request.head;
    append_response(out, head, !ready_probe ? "ok\n" : draining ? "draining\n" : "ready\n");
    return status;
}

namespace {
/// Marks a handler call in the loop's slot (the master's watchdog reads it) and, on the
/// way out, counts it into the handler's latency histogram.
class TimedCall {
public:
    TimedCall(LoopSlot* slot, HandlerStats* stats) : slot_(slot), stats_(stats) {
        if (!slot_) return;
        slot_->running_handler.store(stats_ ? static_cast<std::uint32_t>(stats_ - slot_->handlers) + 1 : 0,
                                     std::memory_order_relaxed);
        // The watchdog works in seconds: the coarse clock (a few ns, not ~27) is enough for it.
        // Release: the master reading this start also sees which handler it belongs to.
        slot_->handler_started_ns.store(coarse_monotonic_now_ns(), std::memory_order_release);
        started_ = CycleClock::now();
    }
    ~TimedCall() {
        if (!slot_) return;
        // Signed: a thread moved to a core whose counter lags reads a small negative time, not 2^64.
        const auto elapsed = static_cast<std::int64_t>(CycleClock::now() - started_);
        slot_->handler_started_ns.store(0, std::memory_order_relaxed);
        if (!stats_) return;
        const double ns = elapsed > 0 ? std::min(CycleClock::to_ns(std::uint64_t(elapsed)), 1e15) : 0.0;
        unsigned bucket = 0;
        while (bucket < std::size(kLatencyBounds) && ns > kLatencyBounds[bucket] * 1e9) ++bucket;
        bump(stats_->latency[bucket]);
        bump(stats_->latency_sum_ns, static_cast<std::uint64_t>(ns));
    }
    TimedCall(const TimedCall&) = delete;
    TimedCall& operator=(const TimedCall&) = delete;

private:
    LoopSlot* slot_;
    HandlerStats* stats_;
    std::uint64_t started_ = 0;
};
} // namespace

int Router::run_handler(const HandlerTable::Entry& entry, const Context& ctx, std::string_view query,
                        std::string& out) {
    const HandlerVersion& handler = *entry.version;
    HandlerStats* stats = slot_ ? entry.stats : nullptr;
    reply_.reset();
    view_.bind(ctx.request, ctx.path, query, ctx.client.address, ctx.client.port, handler.state());
    // Every way a call can fail ends here: counted as the handler's error, answered 500.
    const auto failed = [&] {
        if (stats) bump(stats->errors), bump(stats->requests[status_class(500)]);
        return error(ctx, 500, out);
    };
    int status;
    try {
        TimedCall timed(slot_, stats);
        RunningHandler marker(handler);  // named in the crash report if this call brings the process down
        status = handler.handle(view_.raw(), reply_.raw());
    } catch (const std::exception& e) {
        spdlog::error("handler {}: threw on {} {}: {}", handler.describe(), ctx.request.method, ctx.path, e.what());
        return failed();
    } catch (...) {
        spdlog::error("handler {}: threw a non-std exception on {} {}", handler.describe(), ctx.request.method,
                      ctx.path);
        return failed();
    }
    if (!reply_.consistent()) {
        spdlog::error("handler {}: left its reply buffer inconsistent (size beyond capacity, or moved data)",
                      handler.describe());
        return failed();
    }
    if (status < 200 || status > 599) {
        spdlog::error("handler {}: returned invalid HTTP status {}", handler.describe(), status);
        return failed();
    }
    if (stats) bump(stats->requests[status_class(status)]);
    ResponseHead head;
    head.status = status;
    head.content_type = reply_.content_type();
    head.extra_headers = reply_.extra_headers();
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    head.head_only = ctx.request.head;
    append_response(out, head, reply_.body());
    return status;
}

int Router::serve_quarantined(const Context& ctx, std::string& out) {
    ResponseHead head;
    head.status = 503;
    head.content_type = "text/plain; charset=utf-8";
    const std::string retry = "Retry-After: " + std::to_string(retry_after_s_) + "\r\n";
    head.extra_headers = retry;
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    head.head_only = ctx.request.head;
    append_response(out, head, "503 Service Unavailable: this handler version kept crashing and is quarantined "
                               "until a new version is dropped in\n");
    return 503;
}

int Router::serve_report(const Context& ctx, bool metrics, std::string& out) {
    if (ctx.request.method != "GET" && !ctx.request.head) return error(ctx, 405, out);
    ResponseHead head;
    head.status = 200;
    head.content_type = metrics ? "text/plain; version=0.0.4; charset=utf-8" : "application/json";
    head.extra_headers = "Cache-Control: no-store\r\n";
    head.date = date_.now();
    head.keep_alive = ctx.keep_alive;
    head.http10 = ctx.http10;
    head.head_only = ctx.request.head;
    std::string body;
    try {
        body = metrics ? render_metrics(*shared_) : render_status(*shared_);
    } catch (const std::exception& e) {
        spdlog::error("{}: {}", metrics ? "/metrics" : "/-/status", e.what());
        return error(ctx, 500, out);
    }
    append_response(out, head, body);
    return 200;
}

int Router::serve_static(const Context& ctx, std::string& out, StaticFiles::File& body_file) {
    if (ctx.request.method != "GET" && !ctx.request.head) {
        ResponseHead head;
        head.status = 405;
        head.content_type = "text/plain; charset=utf-8";
        head.extra_headers = "Allow: GET, HEAD\r\n";
        head.date = date_.now();
        head.keep_alive = ctx.keep_alive;
        head.http10 = ctx.http10;
        append_response(out, head, "405 Method Not Allowed\n");
        return 405;
    }
    if (has_unsafe_segment(ctx.path) || has_hidden_segment(ctx.path)) {
        return error(ctx, 404, out);
    }
    StaticFiles::File file;
    switch (www_.open(ctx.path, file)) {
    case StaticFiles::Outcome::found:
        break;
    case StaticFiles::Outcome::not_found:
        return error(ctx, 404, out);
    case StaticFiles::Outcome::forbidden:
        return error(ctx, 403, out);
    case StaticFiles::Outcome::redirect_to_slash: {
        // Location is built from the raw target's path so that encoding survives; leading slashes
        // collapse to one, or "//host/" would send the browser to another site.
        std::string_view raw = split_target(without_scheme_and_authority(ctx.request.target)).path;
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
        return 301;
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
    if (ctx.request.head) return 200;
    if (file.size >= kStreamFileBytes) {
        body_file = std::move(file);
        return 200;
    }
    if (!StaticFiles::read_into(file, out)) {
        out.resize(before);
        spdlog::error("static file {}: read failed", ctx.path);
        return error(ctx, 500, out);
    }
    return 200;
}

int Router::error(const Context& ctx, int status, std::string& out) {
    // A request this malformed says nothing good about the rest of the stream: close after it.
    const bool keep_alive = ctx.keep_alive && status != 400;
    if (ctx.keep_alive && !keep_alive) close_after_ = true;
    append_error(out, status, date_.now(), keep_alive, ctx.http10, ctx.request.head);
    return status;
}

} // namespace cspd
