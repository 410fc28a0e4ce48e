#include "routing/builtin_endpoints.hpp"

#include "handler/host_services.hpp"
#include "routing/status_report.hpp"

#include <spdlog/spdlog.h>

#include <string>

namespace cspd {

std::optional<HttpStatus> BuiltinEndpoints::try_serve(Exchange& exchange) const {
    const std::string_view path = exchange.path;
    if (options_.probes) {
        if (path == "/-/healthy") return probe(exchange, false);
        if (path == "/-/ready") return probe(exchange, true);
    }
    if (shared_ && options_.status_endpoints && (!options_.status_port_only || exchange.client.status_port())) {
        if (path == "/metrics") return report(exchange, true);
        if (path == "/-/status") return report(exchange, false);
    }
    return std::nullopt;
}

HttpStatus BuiltinEndpoints::probe(Exchange& exchange, bool ready_probe) const {
    // healthy: the process answers. ready: it also takes new work (not draining).
    const bool draining = draining_ && *draining_;
    const HttpStatus status = ready_probe && draining ? HttpStatus::service_unavailable : HttpStatus::ok;
    ResponseHead head = exchange.head(status, "text/plain; charset=utf-8");
    head.extra_headers = "Cache-Control: no-store\r\n";
    return exchange.send(head, !ready_probe ? "ok\n" : draining ? "draining\n" : "ready\n");
}

HttpStatus BuiltinEndpoints::report(Exchange& exchange, bool metrics) const {
    if (exchange.request.method != "GET" && !exchange.request.head) return exchange.method_not_allowed();
    std::string body;
    try {
        const SharedStore* store = host_services().store;
        body = metrics ? render_metrics(*shared_, store, tls_)
                       : render_status(*shared_, !exchange.client.status_port(), store, tls_);
    } catch (const std::exception& e) {
        spdlog::error("{}: {}", metrics ? "/metrics" : "/-/status", e.what());
        return exchange.error(HttpStatus::internal_server_error);
    }
    ResponseHead head =
        exchange.head(HttpStatus::ok, metrics ? "text/plain; version=0.0.4; charset=utf-8" : "application/json");
    head.extra_headers = "Cache-Control: no-store\r\n";
    return exchange.send(head, body);
}

HttpStatus BuiltinEndpoints::quarantined(Exchange& exchange) const {
    ResponseHead head = exchange.head(HttpStatus::service_unavailable, "text/plain; charset=utf-8");
    const std::string retry = "Retry-After: " + std::to_string(options_.retry_after_s) + "\r\n";
    head.extra_headers = retry;
    return exchange.send(head, "503 Service Unavailable: this handler version kept crashing and is quarantined "
                               "until a new version is dropped in\n");
}

HttpStatus BuiltinEndpoints::busy(Exchange& exchange) const {
    ResponseHead head = exchange.head(HttpStatus::service_unavailable, "text/plain; charset=utf-8");
    head.extra_headers = "Retry-After: 1\r\n";
    return exchange.send(head, "503 Service Unavailable: every thread of this blocking handler's pool is busy "
                               "and its queue is full\n");
}

HttpStatus BuiltinEndpoints::full(Exchange& exchange) const {
    ResponseHead head = exchange.head(HttpStatus::service_unavailable, "text/plain; charset=utf-8");
    head.extra_headers = "Retry-After: 1\r\n";
    return exchange.send(head, "503 Service Unavailable: the server holds as many connections as it may "
                               "(--max-connections)\n");
}

}  // namespace cspd
