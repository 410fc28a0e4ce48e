// The host's side of the SDK ABI (sdk/include/csp/csp.h): the request view a
// handler reads and the reply buffer it writes, in the layout of the ABI the handler
// was built for (1, or 2.x). An event loop reuses one of each for every request, so that
// the request path does not allocate; a call whose answer comes later keeps its own.
#pragma once

#include "handler/abi_v1.hpp"
#include "handler/pending.hpp"
#include "handler/websocket_channel.hpp"
#include "handler/version.hpp"
#include "http/request.hpp"
#include "http/request_id.hpp"
#include "http/response_fields.hpp"

#include <csp/csp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>
#include <string>
#include <string_view>

namespace cspd {

class HandlerReply {
public:
    HandlerReply();
    HandlerReply(const HandlerReply&) = delete;
    HandlerReply& operator=(const HandlerReply&) = delete;

    /// Empties the reply for the next call, of a handler of `abi`; drops a large buffer so idle
    /// connections stay small.
    void reset(HandlerAbi abi = HandlerAbi::v2);
    /// Where this call's csp_reply_defer goes (null: it returns NULL). Cleared by reset().
    void set_pending_source(PendingReply::Source* source) { pending_source_ = source; }
    /// The deferred reply this reply now belongs to: csp_reply_stream turns it into a stream.
    void set_pending(PendingReply* pending) { pending_ = pending; }
    /// Where this call's csp_ws_accept goes (null: it returns NULL). Cleared by reset().
    void set_websocket_source(WebSocketChannel::Source* source) { websocket_source_ = source; }
    /// The WebSocket the handler accepted during this call, or null; and the subprotocol it chose.
    WebSocketChannel* websocket() const { return websocket_; }
    std::string_view websocket_protocol() const { return websocket_protocol_; }
    /// The extensions the conversation speaks (permessage-deflate's answer), as the 101 says them.
    std::string_view websocket_extensions() const { return websocket_extensions_; }

    csp_reply* raw() { return &reply_; }
    std::string_view body() const { return {reply_.data, reply_.size}; }
    /// False if the handler left the reply's fields pointing outside the host's buffer (it may
    /// write them directly): its body must not be read.
    bool consistent() const {
        return reply_.data == buffer_.data() && reply_.capacity == buffer_.size() && reply_.size <= reply_.capacity;
    }
    std::string_view content_type() const { return content_type_; }
    /// The fields the handler set (csp_reply_header, csp_reply_set_cookie...), checked as they came.
    const ResponseFields& fields() const { return fields_; }
    /// csp_reply_cache: keep this reply for later GETs this many seconds (0: not at all).
    unsigned cache_seconds() const { return cache_seconds_; }
    /// csp_reply_cache_vary: the request headers whose values are part of the cache key.
    const std::vector<std::string>& cache_vary() const { return cache_vary_; }
    /// csp_reply_compress: false if the handler said CSP_COMPRESS_OFF for this answer.
    bool compress() const { return compress_; }

private:
    friend struct HostApi;
    friend struct ToolkitApi;
    friend struct WebSocketApi;
    std::string buffer_;  // reply_.data points into it
    unsigned cache_seconds_ = 0;
    std::vector<std::string> cache_vary_;
    bool compress_ = true;
    std::string content_type_;
    ResponseFields fields_;
    PendingReply::Source* pending_source_ = nullptr;
    PendingReply* pending_ = nullptr;
    WebSocketChannel::Source* websocket_source_ = nullptr;
    WebSocketChannel* websocket_ = nullptr;
    std::string websocket_protocol_;
    csp_reply reply_{};

public:
    /// Written by whoever accepts the conversation (the session, through HandlerCall).
    std::string websocket_extensions_;
};

class HandlerRequestView {
public:
    HandlerRequestView();
    ~HandlerRequestView();
    HandlerRequestView(const HandlerRequestView&) = delete;
    HandlerRequestView& operator=(const HandlerRequestView&) = delete;

    /// The view behind a request the host handed to a handler.
    static HandlerRequestView& of(const csp_request* req) {
        return *static_cast<HandlerRequestView*>(const_cast<void*>(req->host));
    }

    /// What the handler is told besides the request itself.
    struct Context {
        std::string_view decoded_path;
        std::string_view path_info;  ///< after /csp/NAME: "" or starting with '/'
        std::string_view query;
        std::string_view client_addr;
        unsigned short client_port = 0;
        void* state = nullptr;
        const HandlerVersion* version = nullptr;  ///< whose call it is (csp_log tags its lines with it)
        RequestId id;                             ///< unless the client sent a sane X-Request-Id
    };

    /// Points the view at `request`, in `abi`'s layout; every pointer handed to the handler stays
    /// valid until the next bind.
    void bind(const HttpRequest& request, const Context& context, HandlerAbi abi = HandlerAbi::v2);

    const csp_request* raw() const { return &view_; }
    /// The request's id (csp_request_id): the client's sane X-Request-Id, or the one made for it.
    std::string_view request_id();
    /// The request the view shows (its own copy after keep()).
    const HttpRequest& request() const { return *request_; }
    /// Whose call the view is bound for (null outside a call).
    const HandlerVersion* version() const { return version_; }
    const abi1::request* raw_v1() const { return &view_v1_; }

    /// Copies everything the view points at into storage of its own and points the view there:
    /// for a call whose answer comes later, which must outlive the connection's buffers.
    void keep();

private:
    friend struct HostApi;
    friend struct ToolkitApi;
    friend struct WebSocketApi;
    struct Kept;
    const HttpRequest* request_ = nullptr;
    const HandlerVersion* version_ = nullptr;
    RequestId id_;
    // Formatted on first use, by whichever thread asks first (a deferred call may log from any).
    std::atomic<std::uint8_t> id_state_{0};  // 0: not yet, 1: being formatted, 2: id_text_ is set
    csp_str id_text_{};
    char id_buffer_[RequestId::kMaxText];
    bool args_listed_ = false;
    std::vector<std::pair<csp_str, csp_str>> args_;  // csp_arg_at's list, made on first use
    std::unique_ptr<Kept> kept_;  // after keep()
    HandlerAbi abi_ = HandlerAbi::v2;
    std::deque<std::string> decoded_args_;  // stable addresses for query_arg results
    csp_request view_{};
    abi1::request view_v1_{};
};

/// The function table every csp_request, csp_reply and csp_pending of ABI 2 carries.
const csp_host_api& host_api();
/// ABI 1's, for handlers built against it.
const abi1::host_api& host_api_v1();

}  // namespace cspd
