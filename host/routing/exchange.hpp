// One request being answered: the request, who sent it, and the output its response
// is appended to. Every route builds its response through it, so that each answer has
// the same Date, keep-alive and HEAD handling.
#pragma once

#include "http/date_cache.hpp"
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
    unsigned short port = 0;
    Lane lane = Lane::public_port;
    bool secure = false;  ///< came over TLS
    bool status_port() const { return lane == Lane::status_port; }
};

class PendingCalls;

/// What the connection decides about a request before it is routed.
struct RequestContext {
    ClientInfo client;
    bool keep_alive = true;          ///< the connection stays open after this response
    PendingCalls* pending = nullptr;  ///< takes calls whose answer is pending; null: every call answers now
};

class Exchange {
public:
    Exchange(const HttpRequest& req, const RequestContext& context, DateCache& date, std::string& out)
        : request(req), client(context.client), keep_alive(context.keep_alive),
          http10(req.http_major == 1 && req.http_minor == 0), pending(context.pending), date_(date), out_(out) {}

    /// A head for `status` with the exchange's date and framing; the caller adds the rest.
    ResponseHead head(HttpStatus status, std::string_view content_type) const;
    /// Appends a complete response; returns its status.
    HttpStatus send(const ResponseHead& head, std::string_view body);
    /// A short text/plain error. A 400 closes the connection after it: a request that
    /// malformed says nothing good about the rest of the stream.
    HttpStatus error(HttpStatus status);
    /// 405 with `Allow: GET, HEAD`.
    HttpStatus method_not_allowed();
    /// How a handler's answer to this exchange is framed.
    ResponseFrame frame() const {
        return {keep_alive && !close_after, http10, request.head, !request_id_header.empty(), request.http_major == 2};
    }

    std::string& out() { return out_; }
    DateCache& date() { return date_; }

    const HttpRequest& request;
    const ClientInfo& client;
    const bool keep_alive;
    const bool http10;
    PendingCalls* const pending;  ///< takes calls whose answer is pending, or null
    std::string_view path;     ///< decoded; set by the router once the target is checked
    RequestId id;              ///< this request's, unless the client sent a sane X-Request-Id
    std::string_view request_id_header;  ///< sent back as X-Request-Id, or empty (--request-id-header)
    bool close_after = false;  ///< the response said "Connection: close" on its own account

private:
    DateCache& date_;
    std::string& out_;
};

}  // namespace cspd
