// One request being answered: the request, who sent it, and the sink its response goes to
// (the protocol session). Every route answers through it, so that each answer has the same
// framing, request id and error bodies.
#pragma once

#include "common/ip_address.hpp"
#include "http/request_id.hpp"
#include "http/request.hpp"
#include "http/response.hpp"
#include "http/status.hpp"
#include "routing/handler_answer.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace cspd {

/// Which connection budget let a client in: a flood of the public port cannot use up the others.
enum class Lane : std::uint8_t {
    public_port,    ///< --port, within --max-connections
    status_port,    ///< --status-listen, within a small budget of its own
    probe_reserve,  ///< --port past --max-connections: one request, a probe (/-/healthy, /-/ready) or 503
};

struct ClientInfo {
    std::string_view address;  ///< "127.0.0.1"
    unsigned short port = 0;   ///< 0 when a trusted proxy named the client (--trust-proxy)
    Lane lane = Lane::public_port;
    bool secure = false;  ///< came over TLS
    bool over_client_cap = false;  ///< its client held --client-connections already: refused
    std::uint32_t v4 = 0;          ///< `address` as IPv4, host order, when it is one (0: parse `address`)
    bool status_port() const { return lane == Lane::status_port; }
    /// `address` as bytes: from `v4` when it is IPv4 (no parsing per request), else parsed.
    IpAddress ip() const { return v4 ? IpAddress::v4(v4) : IpAddress::parse(address).value_or(IpAddress{}); }
};

class ClientUnit;
class PendingCalls;

/// What the connection decides about a request before it is routed.
struct RequestContext {
    ClientInfo client;
    bool keep_alive = true;          ///< the connection stays open after this response
    PendingCalls* pending = nullptr;  ///< takes calls whose answer is pending; null: every call answers now
};

class Exchange {
public:
    Exchange(const HttpRequest& req, const RequestContext& context, ResponseSink& sink)
        : request(req), client(context.client), keep_alive(context.keep_alive),
          http10(req.http_major == 1 && req.http_minor == 0), pending(context.pending), sink_(sink) {}

    /// A response of `status` with the exchange's request id; the caller adds the rest.
    Response response(HttpStatus status, std::string_view content_type, std::string_view body = {}) const;
    /// Sends `response`; returns its status.
    HttpStatus send(const Response& response);
    /// A short text/plain error. A 400 closes the connection after it: a request that
    /// malformed says nothing good about the rest of the stream.
    HttpStatus error(HttpStatus status);
    /// 405 with `Allow: GET, HEAD`.
    HttpStatus method_not_allowed();
    /// How a handler's answer to this exchange is framed.
    ResponseFrame frame() const {
        return {keep_alive && !close_after, http10, request.head, !request_id_header.empty(), compression};
    }

    ResponseSink& sink() { return sink_; }

    const HttpRequest& request;
    const ClientInfo& client;
    const bool keep_alive;
    const bool http10;
    PendingCalls* const pending;  ///< takes calls whose answer is pending, or null
    std::string_view path;     ///< decoded; set by the router once the target is checked
    RequestId id;              ///< this request's, unless the client sent a sane X-Request-Id
    std::string_view request_id_header;  ///< sent back as X-Request-Id, or empty (--request-id-header)
    bool close_after = false;  ///< the response said "Connection: close" on its own account
    const CompressionPolicy* compression = nullptr;  ///< set by the router for answers it may compress
    ClientUnit* client_unit = nullptr;  ///< held for the call's WebSocket, which takes it over (CallState)

private:
    ResponseSink& sink_;
};

}  // namespace cspd
