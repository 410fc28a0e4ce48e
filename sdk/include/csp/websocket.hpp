// C++ layer, WebSockets (SDK 2.4): csp::websocket, a handle on one conversation, accepted with
// lambdas for its messages, its end and its room to write; csp::publish for topics. Included by
// csp/csp.hpp.
//
//   return csp::websocket::accept(req, reply, {
//       .on_message = [](csp::websocket ws, std::string_view text, bool binary) { ws.send(text, binary); },
//   }) ? CSP_WS_ACCEPTED : csp::websocket::refuse(req, reply);
#ifndef CSP_WEBSOCKET_HPP
#define CSP_WEBSOCKET_HPP

#include <csp/csp.hpp>

#include <exception>
#include <functional>
#include <string_view>

namespace csp {

/// One WebSocket conversation. A handle, not an owner: copies name the same conversation, which
/// lives until its on_close has run (the C rules of csp_ws hold: after on_close, do not use it).
class websocket {
public:
    /// What the host tells the handler; each runs on the connection's event loop. The lambdas live
    /// until on_close has run (after it, they are destroyed). The host catches an exception out of
    /// one and closes the conversation with 1011.
    struct handlers {
        std::function<void(websocket ws, std::string_view data, bool binary)> on_message = {};
        std::function<void(websocket ws, int code, std::string_view reason)> on_close = {};
        std::function<void(websocket ws)> on_writable = {};
        /// 2.5: the topic lost messages across hosts (csp_ws_callbacks::on_topic_gap). Left empty,
        /// the host closes the conversation with 1012 instead.
        std::function<void(websocket ws, std::string_view topic)> on_topic_gap = {};
    };

    websocket() = default;
    explicit websocket(csp_ws* ws) : ws_(ws) {}

    /// Accepts the request (csp_ws_accept); then return CSP_WS_ACCEPTED. Empty when it is not a
    /// valid handshake (answer with refuse()) or `protocol` was not offered.
    static websocket accept(const request& req, reply& r, handlers h, std::string_view protocol = {}) {
        auto* kept = new handlers(std::move(h));
        const csp_ws_callbacks callbacks = {sizeof(csp_ws_callbacks), &message_trampoline, &close_trampoline,
                                            &writable_trampoline, kept,
                                            kept->on_topic_gap ? &topic_gap_trampoline : nullptr};
        csp_ws* ws = req.raw()->api->ws_accept(req.raw(), r.raw(), &callbacks, protocol.data(), protocol.size());
        if (!ws) delete kept;
        return websocket(ws);
    }
    /// The answer to a request that is not a valid handshake (426 or 400); returns its status.
    static int refuse(const request& req, reply& r) { return csp_ws_refuse(req.raw(), r.raw()); }

    explicit operator bool() const { return ws_ != nullptr; }
    csp_ws* get() const { return ws_; }

    /// One message, text (valid UTF-8) unless `binary`: 0, CSP_AGAIN (on a loop, past the mark:
    /// wait for on_writable), or -1. Off a loop it waits for room.
    int send(std::string_view data, bool binary = false) const {
        return csp_ws_send(ws_, data.data(), data.size(), binary ? CSP_WS_BINARY : CSP_WS_TEXT);
    }
    /// Begins the closing handshake (csp_ws_close).
    int close(unsigned code = 1000, std::string_view reason = {}) const {
        return ws_ ? ws_->api->ws_close(ws_, code, reason.data(), reason.size()) : -1;
    }
    int subscribe(std::string_view topic) const {
        return ws_ ? ws_->api->ws_subscribe(ws_, topic.data(), topic.size()) : -1;
    }
    int unsubscribe(std::string_view topic) const {
        return ws_ ? ws_->api->ws_unsubscribe(ws_, topic.data(), topic.size()) : -1;
    }
    /// Publishes to `topic` (csp_publish) from this conversation's host.
    int publish(std::string_view topic, std::string_view data, bool binary = false) const {
        return ws_ ? ws_->api->publish(topic.data(), topic.size(), data.data(), data.size(), binary) : -1;
    }

    friend bool operator==(websocket a, websocket b) { return a.ws_ == b.ws_; }

private:
    static void message_trampoline(csp_ws* ws, const void* data, size_t size, int binary, void* user_data) {
        auto* h = static_cast<handlers*>(user_data);
        if (h->on_message)
            h->on_message(websocket(ws), std::string_view(static_cast<const char*>(data), size), binary != 0);
    }
    static void topic_gap_trampoline(csp_ws* ws, const char* topic, size_t topic_size, void* user_data) {
        auto* h = static_cast<handlers*>(user_data);
        if (h->on_topic_gap) h->on_topic_gap(websocket(ws), std::string_view(topic, topic_size));
    }
    static void writable_trampoline(csp_ws* ws, void* user_data) {
        auto* h = static_cast<handlers*>(user_data);
        if (h->on_writable) h->on_writable(websocket(ws));
    }
    static void close_trampoline(csp_ws* ws, int code, const char* reason, size_t size, void* user_data) {
        auto* h = static_cast<handlers*>(user_data);
        try {
            if (h->on_close) h->on_close(websocket(ws), code, std::string_view(reason ? reason : "", size));
        } catch (...) {
            delete h;
            throw;
        }
        delete h;
    }

    csp_ws* ws_ = nullptr;
};

/// Publishes one message to `topic` for every subscriber of the server (csp_publish). `api`: any the
/// host gave (req.raw()->api, an init context's). 0, CSP_AGAIN, or -1.
inline int publish(const csp_host_api* api, std::string_view topic, std::string_view data, bool binary = false) {
    return api->publish(topic.data(), topic.size(), data.data(), data.size(), binary ? CSP_WS_BINARY : CSP_WS_TEXT);
}

}  // namespace csp

#endif  // CSP_WEBSOCKET_HPP
