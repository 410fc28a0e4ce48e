// The host's side of SDK 2.4: WebSockets (accepting, refusing, sending, closing, topics) and
// csp_publish. Functions of the csp_host_api table; they check what the handler gave and hand
// the rest to the WebSocketChannel or the worker's Publisher.
#pragma once

#include <csp/csp.h>

#include <cstddef>

namespace cspd {

struct WebSocketApi {
    /// Topic names are 1 to this many bytes.
    static constexpr std::size_t kMaxTopic = 128;

    static csp_ws* accept(const csp_request* req, csp_reply* reply, const csp_ws_callbacks* callbacks,
                          const char* protocol, size_t protocol_size) noexcept;
    static int refuse(const csp_request* req, csp_reply* reply) noexcept;
    static int send(csp_ws* ws, const void* data, size_t size, int binary) noexcept;
    static int close(csp_ws* ws, unsigned code, const char* reason, size_t reason_size) noexcept;
    static int subscribe(csp_ws* ws, const char* topic, size_t topic_size) noexcept;
    static int unsubscribe(csp_ws* ws, const char* topic, size_t topic_size) noexcept;
    static int publish(const char* topic, size_t topic_size, const void* data, size_t size, int binary) noexcept;
};

}  // namespace cspd
