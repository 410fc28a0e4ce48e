// Decides what answers a request -- a /csp/ handler, one of the host's own endpoints,
// or a static file -- after checking its target, and sends the response to the caller's
// ResponseSink (the protocol session). One Router per event loop; its scratch objects are
// reused by every request on that loop.
#pragma once

#include "common/ip_address.hpp"
#include "handler/table.hpp"
#include "limits/client_leases.hpp"
#include "routing/access_log_line.hpp"
#include "routing/builtin_endpoints.hpp"
#include "routing/exchange.hpp"
#include "routing/handler_call.hpp"
#include "routing/reply_cache.hpp"
#include "routing/static_route.hpp"
#include "routing/static_files.hpp"

#include <memory>
#include <string>

namespace cspd {

struct LoopSlot;
struct SharedStats;

/// What became of one request.
struct Routed {
    bool pending = false;        ///< the answer comes later, through the context's PendingCalls
    HttpStatus status = HttpStatus::ok;  ///< what was sent, unless `pending`
    bool close_after = false;     ///< the response said "Connection: close" on its own account
    StaticFiles::File body_file;  ///< open when a large file's bytes follow the head on the wire
    // For the access log.
    Responder responder = Responder::none;  ///< none: the host refused the request itself (400, 404)
    const HandlerVersion* handler = nullptr;  ///< the version that answered, or owes the answer
    bool cached = false;                      ///< the reply cache answered
    RequestId id;                             ///< the request's, unless...
    std::string_view request_id_header;       ///< ...the client sent a sane X-Request-Id to send back
};

class Router {
public:
    /// /-/ready says 503 once `*draining` is true.
    Router(const HandlerTable& handlers, const StaticFiles& www, BuiltinOptions options = {},
           const bool* draining = nullptr);

    /// Counts every response into `slot`; handler calls are timed and marked there for the
    /// watchdog; /-/status and /metrics report `shared`; quarantined versions answer 503.
    void attach_stats(SharedStats& shared, LoopSlot& slot);
    /// /-/status and /metrics report HTTPS certificates from `board`.
    void attach_tls_status(const TlsStatusBoard& board) { builtin_.attach_tls_status(board); }

    /// Sends the response to `request` to `sink`, or hands the call to `context.pending`.
    Routed respond(const HttpRequest& request, const RequestContext& context, ResponseSink& sink);

    /// Counts a response sent later (a deferred or blocking handler's) with the others.
    void count_response(HttpStatus status);

    /// A call answered later whose handler returned `status`: its reply is kept if it asked to be
    /// (csp_reply_cache).
    void remember(const CallState& call, const HandlerVersion& version, HttpStatus status);
    /// `handler` was replaced or removed: its cached replies go.
    void forget_cached(std::string_view handler) { cache_.forget(handler); }

private:
    HttpStatus route(Exchange& exchange, Routed& routed);
    HttpStatus call_handler(Exchange& exchange, std::string_view after_prefix, std::string_view query, Routed& routed);
    /// Sets exchange.path from the request-target; false (400 sent) if the target is malformed.
    bool check_target(Exchange& exchange, std::string_view& query);

    const HandlerTable& handlers_;
    const StaticFiles& www_;
    BuiltinEndpoints builtin_;
    HandlerCall call_;
    ReplyCache cache_;
    std::string decoded_path_;
    std::string static_scratch_;  // a static file read for one answer
    std::uint32_t id_prefix_;     // random: ids of different loops and servers do not meet
    std::uint64_t requests_ = 0;  // this loop's, numbering its request ids
    bool request_id_header_;
    unsigned short https_redirect_port_;
    StaticOptions static_options_;
    StaticCache static_cache_;
    CompressionPolicy compression_;
    CompressedFiles compressed_files_;
    char id_buffer_[RequestId::kMaxText];
    std::unique_ptr<ClientLeases> client_rate_;  // with --client-rate only
    const ProxyTrust* trusted_proxies_;    // with --trust-proxy only
    ClientLimits* proxied_websockets_;     // with both --trust-proxy and --client-connections
    IpAddress client_ip_{};                   // the request routed now's client, with either of those
    bool client_named_ = false;               // ...and a trusted proxy named it
    char forwarded_text_[IpAddress::kMaxText];                 // the client a trusted proxy named, for the request routed now
    SharedStats* shared_ = nullptr;
    LoopSlot* slot_ = nullptr;
};

}  // namespace cspd
