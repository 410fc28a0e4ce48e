#include "routing/builtin_endpoints.hpp"

#include "handler/host_services.hpp"
#include "routing/status_report.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>

namespace cspd {
namespace {
constexpr ResponseField kNoStore[] = {{"Cache-Control", "no-store"}};
constexpr ResponseField kRetrySoon[] = {{"Retry-After", "1"}};
}  // namespace

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
    Response response = exchange.response(status, "text/plain; charset=utf-8",
                                          !ready_probe ? "ok\n" : draining ? "draining\n" : "ready\n");
    response.fields = kNoStore;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::report(Exchange& exchange, bool metrics) const {
    if (exchange.request.method != "GET" && !exchange.request.head) return exchange.method_not_allowed();
    std::string body;
    try {
        const SharedStore* store = host_services().store;
        ClientLimits* clients = host_services().client_limits;
        const std::string_view cluster = host_services().cluster_redis;
        body = metrics ? render_metrics(*shared_, store, tls_, clients, cluster)
                       : render_status(*shared_, !exchange.client.status_port(), store, tls_, clients, cluster);
    } catch (const std::exception& e) {
        spdlog::error("{}: {}", metrics ? "/metrics" : "/-/status", e.what());
        return exchange.error(HttpStatus::internal_server_error);
    }
    Response response = exchange.response(
        HttpStatus::ok, metrics ? "text/plain; version=0.0.4; charset=utf-8" : "application/json", body);
    response.fields = kNoStore;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::quarantined(Exchange& exchange) const {
    const std::string seconds = std::to_string(options_.retry_after_s);
    const ResponseField retry[] = {{"Retry-After", seconds}};
    Response response = exchange.response(HttpStatus::service_unavailable, "text/plain; charset=utf-8",
                                          "503 Service Unavailable: this handler version kept crashing and is "
                                          "quarantined until a new version is dropped in\n");
    response.fields = retry;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::busy(Exchange& exchange) const {
    Response response = exchange.response(HttpStatus::service_unavailable, "text/plain; charset=utf-8",
                                          "503 Service Unavailable: every thread of this blocking handler's pool "
                                          "is busy and its queue is full\n");
    response.fields = kRetrySoon;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::too_many(Exchange& exchange, unsigned retry_after_s) const {
    char seconds[16];
    const ResponseField retry[] = {{"Retry-After", {seconds, std::size_t(std::snprintf(seconds, sizeof seconds, "%u", retry_after_s))}}};
    Response response = exchange.response(HttpStatus::too_many_requests, "text/plain; charset=utf-8",
                                          "429 Too Many Requests: this client's request rate is over the server's "
                                          "limit (--client-rate); see Retry-After\n");
    response.fields = retry;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::client_full(Exchange& exchange, HttpStatus status) const {
    Response response = exchange.response(status, "text/plain; charset=utf-8",
                                          status == HttpStatus::too_many_requests
                                              ? "429 Too Many Requests: this client holds as many connections, streams "
                                                "and WebSockets as it may (--client-connections)\n"
                                              : "503 Service Unavailable: this client holds as many connections, "
                                                "streams and WebSockets as it may (--client-connections)\n");
    response.fields = kRetrySoon;
    return exchange.send(response);
}

HttpStatus BuiltinEndpoints::full(Exchange& exchange) const {
    Response response = exchange.response(HttpStatus::service_unavailable, "text/plain; charset=utf-8",
                                          "503 Service Unavailable: the server holds as many connections as it "
                                          "may (--max-connections)\n");
    response.fields = kRetrySoon;
    return exchange.send(response);
}

}  // namespace cspd
