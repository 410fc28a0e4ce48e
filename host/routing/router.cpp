#include "routing/router.hpp"

#include "common/ascii.hpp"
#include "common/clocks.hpp"
#include "handler/handler_name.hpp"
#include "http/forwarded_for.hpp"
#include "http/uri.hpp"
#include "limits/client_limits.hpp"
#include "routing/handler_preconditions.hpp"
#include "routing/https_redirect.hpp"
#include "routing/static_route.hpp"
#include "websocket/handshake.hpp"
#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <chrono>

namespace cspd {
namespace {
constexpr std::string_view kHandlerPrefix = "/csp/";
constexpr std::size_t kStaticCacheBytes = 8 << 20;  // per loop: small files (64 KiB at most) in memory
constexpr std::size_t kCompressedFilesBytes = 8 << 20;  // per loop: static files compressed on the fly

/// RFC 3986 allows no spaces, tabs or other control bytes in a URI.
bool has_control_bytes(std::string_view target) {
    for (char c : target) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u == 0x7f) return true;
    }
    return false;
}

/// RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host, and a Host must be a valid one
/// (`required`: HTTP/1.1; an HTTP/1.0 request may have none).
bool has_good_host(const HttpRequest& request, bool required) {
    int hosts = 0;
    for (const auto& h : request.headers)
        if (h.name.size() == 4 && iequals(h.name, "host")) {
            // llhttp keeps whitespace after a value, which RFC 9112 allows there.
            if (++hosts > 1 || !is_valid_host_header(trim_ows(h.value))) return false;
        }
    return hosts == 1 || !required;
}
}  // namespace

Router::Router(const HandlerTable& handlers, const StaticFiles& www, BuiltinOptions options,
               const bool* draining)
    : handlers_(handlers), www_(www), builtin_(options, draining), cache_(options.reply_cache_bytes),
      request_id_header_(options.request_id_header), https_redirect_port_(options.https_redirect_port), static_options_{options.static_max_age_s},
      static_cache_(www.watcher(), kStaticCacheBytes), compression_(std::move(options.compression)),
      compressed_files_(kCompressedFilesBytes),
      client_rate_(options.client_limits && options.client_limits->limits_rate()
                       ? std::make_unique<ClientLeases>(*options.client_limits)
                       : nullptr),
      trusted_proxies_(options.trusted_proxies && !options.trusted_proxies->empty() ? options.trusted_proxies : nullptr),
      proxied_websockets_(trusted_proxies_ && options.client_limits && options.client_limits->caps_work()
                              ? options.client_limits
                              : nullptr) {
    call_.warn_past(options.slow_call_warn_ms);
    if (::getrandom(&id_prefix_, sizeof id_prefix_, GRND_NONBLOCK) != sizeof id_prefix_)
        id_prefix_ = static_cast<std::uint32_t>(::getpid() * 2654435761u ^
                                                std::chrono::steady_clock::now().time_since_epoch().count());
}

void Router::attach_stats(SharedStats& shared, LoopSlot& slot) {
    shared_ = &shared;
    slot_ = &slot;
    builtin_.attach_stats(shared);
    call_.attach_stats(slot);
    cache_.attach_stats(slot);
    compression_.counters = {slot.compressed_responses, &slot.compression_bytes_in, &slot.compression_bytes_out};
}

Routed Router::respond(const HttpRequest& request, const RequestContext& context, ResponseSink& sink) {
    // From a proxy we trust, the client is the one it names: handlers see it, limits count it.
    std::optional<RequestContext> behind;
    client_named_ = false;
    if (client_rate_ || trusted_proxies_) {
        client_ip_ = context.client.ip();
        if (trusted_proxies_ && !context.client.status_port())
            if (const std::optional<IpAddress> named = trusted_proxies_->client_behind(client_ip_, request)) {
                behind = context;
                client_ip_ = *named;
                client_named_ = true;
                behind->client.address = {forwarded_text_, named->format(forwarded_text_)};
                behind->client.port = 0;
                behind->client.v4 = named->v4_value();
            }
    }
    Exchange exchange(request, behind ? *behind : context, sink);
    exchange.id = {id_prefix_, ++requests_};
    if (request_id_header_) {
        const std::string_view sent = request.header("x-request-id");
        exchange.request_id_header = is_sane_request_id(sent) ? sent : exchange.id.format(id_buffer_);
    }
    if (slot_) bump(slot_->protocol_requests[request.http_major == 2 ? 1 : 0]);
    Routed routed;
    routed.status = route(exchange, routed);
    routed.close_after = exchange.close_after;
    routed.id = exchange.id;
    routed.request_id_header = exchange.request_id_header;
    if (!routed.pending) count_response(routed.status);
    return routed;
}

void Router::remember(const CallState& call, const HandlerVersion& version, HttpStatus status) {
    if (call.reply.cache_seconds() == 0 || !call.reply.consistent()) return;
    const csp_request& request = *call.view.raw();
    const std::string_view method(request.method.data, request.method.size);
    // Only a GET's whole answer: a handler may leave a HEAD's body out.
    if (method != "GET" || request.body.size != 0) return;
    cache_.store(version, request, call.reply, status, coarse_monotonic_now_ns());
}

void Router::count_response(HttpStatus status) {
    if (slot_) bump(slot_->requests[status_class(code(status))]);
}

bool Router::check_target(Exchange& exchange, std::string_view& query) {
    const HttpRequest& request = exchange.request;
    if (!has_good_host(request, !exchange.http10)) return false;
    // Origin-form ("/path"), or absolute-form ("http://host/path"), which a server must accept
    // (RFC 9112 §3.2.2); asterisk- and authority-form are not for this server.
    const std::string_view origin = without_scheme_and_authority(request.target);
    SplitTarget target = split_target(origin);
    if (target.path.empty() && origin.size() != request.target.size()) target.path = "/";  // "http://host?q"
    if (target.path.empty() || target.path.front() != '/' || has_control_bytes(request.target)) return false;
    query = target.query;
    if (target.path.find('%') == std::string_view::npos) {
        exchange.path = target.path;  // nothing to decode: no copy
        return true;
    }
    decoded_path_.clear();
    if (!percent_decode(target.path, decoded_path_, false)) return false;
    exchange.path = decoded_path_;
    return true;
}

HttpStatus Router::route(Exchange& exchange, Routed& routed) {
    std::string_view query;
    if (!check_target(exchange, query)) return exchange.error(HttpStatus::bad_request);
    const std::string_view path = exchange.path;
    // The status address is for operators: probes, /-/status and /metrics, nothing else.
    if (exchange.client.status_port() && path != "/metrics" && !path.starts_with("/-/"))
        return exchange.error(HttpStatus::not_found);
    // --https-redirect: everything but the operator's paths moves to HTTPS.
    if (https_redirect_port_ && !exchange.client.secure && !exchange.client.status_port() &&
        !path.starts_with("/-/") && path != "/metrics") {
        routed.responder = Responder::builtin;
        return redirect_to_https(exchange, https_redirect_port_);
    }
    // Let in past --max-connections so that probes still reach a flooded server: nothing else.
    if (exchange.client.lane == Lane::probe_reserve && path != "/-/healthy" && path != "/-/ready") {
        routed.responder = Responder::builtin;
        return builtin_.full(exchange);
    }
    // --client-connections: a connection past its client's share answers probes, else 503 and closes.
    if (exchange.client.over_client_cap) {
        exchange.close_after = true;  // a probe too: it must not keep an over-cap connection open
        if (path != "/-/healthy" && path != "/-/ready") {
            routed.responder = Responder::builtin;
            // A WebSocket is refused as one (429), anything else as the connection it came on (503).
            return ws::check_handshake(exchange.request) == ws::Handshake::not_websocket
                       ? builtin_.client_full(exchange)
                       : builtin_.client_full(exchange, HttpStatus::too_many_requests);
        }
    }
    // --client-rate: every request counts but the operator's (probes, the status address).
    if (client_rate_ && !exchange.client.status_port() && path != "/-/healthy" && path != "/-/ready")
        if (const unsigned wait_s = client_rate_->charge_request(client_ip_)) {
            routed.responder = Responder::builtin;
            return builtin_.too_many(exchange, wait_s);
        }
    if (path.starts_with(kHandlerPrefix)) return call_handler(exchange, path.substr(kHandlerPrefix.size()), query, routed);
    if (path.starts_with("/-/") || path == "/metrics")
        if (const std::optional<HttpStatus> answered = builtin_.try_serve(exchange)) {
            routed.responder = Responder::builtin;
            return *answered;
        }
    routed.responder = Responder::static_file;
    StaticCompression compression{&compression_, &compressed_files_};
    return serve_static(www_, exchange, routed.body_file, static_options_, &static_cache_, &static_scratch_, &compression);
}

HttpStatus Router::call_handler(Exchange& exchange, std::string_view after_prefix, std::string_view query,
                                Routed& routed) {
    // /csp/NAME, /csp/NAME/ and /csp/NAME/rest... all reach NAME; the handler sees the rest as path_info.
    const std::size_t slash = after_prefix.find('/');
    const std::string_view name = after_prefix.substr(0, slash);
    const std::string_view path_info = slash == std::string_view::npos ? std::string_view("", 0) : after_prefix.substr(slash);
    const HandlerTable::Entry* handler = is_valid_handler_name(name) ? handlers_.find_entry(name) : nullptr;
    if (!handler) return exchange.error(HttpStatus::not_found);
    exchange.compression = &compression_;  // a handler's answer may be compressed, now or later
    HandlerTable::Entry rolled_back;
    if (shared_) {
        const HandlerFileIdentity& file = handler->version->file();
        if (is_quarantined(*shared_, name, file.size, file.content_hash)) {
            // The version it replaced serves at once, in every loop, until the control thread
            // installs it (a rollback); without one, or if that one is quarantined too, 503.
            const HandlerVersion* fallback = handler->fallback.get();
            if (!fallback ||
                is_quarantined(*shared_, name, fallback->file().size, fallback->file().content_hash))
                return builtin_.quarantined(exchange);
            rolled_back = {handler->fallback, handler->stats, nullptr};
            handler = &rolled_back;
        }
    }
    routed.responder = Responder::handler;
    routed.handler = handler->version.get();
    const HttpRequest& request = exchange.request;
    // A GET with a body could make a handler answer differently from the next GET of that path:
    // such a request neither reads nor fills the cache (remember() checks the body too).
    const bool cacheable = (request.head || request.method == "GET") && request.body.empty();
    if (cacheable && cache_.in_use())
        if (const CachedReply* hit =
                cache_.find(*handler->version, exchange.path, query, request, coarse_monotonic_now_ns())) {
            routed.cached = true;
            const HandlerAnswer answer{hit->status, hit->content_type, hit->fields.list(), hit->body, hit->compress,
                                       &hit->encoded};
            const std::size_t kept = hit->encoded.bytes;
            const CallStatus sent = send_handler_answer(answer, request, exchange.frame(), exchange.request_id_header,
                                                        handler->stats, exchange.sink());
            if (hit->encoded.bytes != kept) cache_.grew(hit->encoded.bytes - kept);
            return sent.sent;
        }
    // --client-connections behind --trust-proxy: the proxy's connection is no client's, so a
    // WebSocket it carries counts for the client it names, for as long as the conversation lasts.
    ClientUnit unit;
    if (proxied_websockets_ && client_named_ && ws::check_handshake(exchange.request) == ws::Handshake::valid) {
        bool held = false;
        if (!proxied_websockets_->hold(client_ip_, held)) {
            routed.responder = Responder::builtin;
            return builtin_.client_full(exchange, HttpStatus::too_many_requests);
        }
        if (held) unit = ClientUnit(*proxied_websockets_, client_ip_);
        exchange.client_unit = &unit;
    }
    CallStatus status;
    switch (call_.run(*handler, exchange, path_info, query, exchange.pending, status)) {
    case CallOutcome::answered:
        if (cacheable && status.sent != HttpStatus::switching_protocols)
            remember(*call_.answered(), *handler->version, status.returned);
        return status.sent;
    case CallOutcome::pending:
        routed.pending = true;
        return HttpStatus::ok;
    case CallOutcome::pool_full:
        return builtin_.busy(exchange);
    }
    return status.sent;
}

}  // namespace cspd
