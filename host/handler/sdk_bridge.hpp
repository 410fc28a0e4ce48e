// The host's side of the SDK ABI (sdk/include/csp/csp.h): the request view a
// handler reads and the reply buffer it writes. One of each per event loop,
// reused for every request so that the request path does not allocate.
#pragma once

#include "http/request.hpp"

#include <csp/csp.h>

#include <deque>
#include <string>
#include <string_view>

namespace cspd {

class HandlerReply {
public:
    HandlerReply();
    HandlerReply(const HandlerReply&) = delete;
    HandlerReply& operator=(const HandlerReply&) = delete;

    /// Empties the reply for the next request; drops a large buffer so idle connections stay small.
    void reset();

    csp_reply* raw() { return &reply_; }
    std::string_view body() const { return {reply_.data, reply_.size}; }
    /// False if the handler left the reply's fields pointing outside the host's buffer (it may
    /// write them directly): its body must not be read.
    bool consistent() const {
        return reply_.data == buffer_.data() && reply_.capacity == buffer_.size() && reply_.size <= reply_.capacity;
    }
    std::string_view content_type() const { return content_type_; }
    /// Extra headers, already serialized as "Name: value\r\n" lines.
    std::string_view extra_headers() const { return extra_headers_; }

private:
    friend struct HostApi;
    std::string buffer_;  // reply_.data points into it
    std::string content_type_;
    std::string extra_headers_;
    csp_reply reply_{};
};

class HandlerRequestView {
public:
    HandlerRequestView();
    HandlerRequestView(const HandlerRequestView&) = delete;
    HandlerRequestView& operator=(const HandlerRequestView&) = delete;

    /// Points the view at `request`; every pointer handed to the handler stays valid until the next bind.
    void bind(const HttpRequest& request, std::string_view decoded_path, std::string_view query,
              std::string_view client_addr, unsigned short client_port, void* state);

    const csp_request* raw() const { return &view_; }

private:
    friend struct HostApi;
    const HttpRequest* request_ = nullptr;
    std::deque<std::string> decoded_args_;  // stable addresses for query_arg results
    csp_request view_{};
};

/// The function table every csp_request and csp_reply carries.
const csp_host_api& host_api();

}  // namespace cspd
