// The host's side of a csp_ws: one WebSocket conversation a handler accepted, which it may send
// to, close, and subscribe to topics from any thread. The handler layer knows only this
// interface; the serving layer implements it (WebSocketLink, between the handler's threads and
// the loop whose connection carries the conversation). Publishing to a topic reaches the same
// layer through the worker's Publisher.
#pragma once

#include "limits/client_limits.hpp"

#include <csp/csp.h>

#include <string_view>

namespace cspd {

class WebSocketChannel {
public:
    /// Where a handler's csp_ws_accept goes: set on the reply, for one call, by whoever runs it.
    class Source {
    public:
        /// The handler accepts its request as a WebSocket (the handshake already checked); null
        /// if that cannot be (answer as usual).
        virtual WebSocketChannel* accept_websocket(const csp_ws_callbacks& callbacks) noexcept = 0;

    protected:
        ~Source() = default;
    };

    WebSocketChannel() noexcept;
    WebSocketChannel(const WebSocketChannel&) = delete;
    WebSocketChannel& operator=(const WebSocketChannel&) = delete;

    csp_ws* handle() noexcept { return &handle_; }
    static WebSocketChannel& of(csp_ws* handle) noexcept { return *static_cast<WebSocketChannel*>(handle->host); }

    /// One message (any thread): 0, CSP_AGAIN (taken; past the high-water mark), -1 (not seen).
    virtual int send(std::string_view data, bool binary) noexcept = 0;
    /// Begins the closing handshake after what was sent (code and reason already checked).
    virtual int close(unsigned code, std::string_view reason) noexcept = 0;
    virtual int subscribe(std::string_view topic) noexcept = 0;
    virtual int unsubscribe(std::string_view topic) noexcept = 0;

    /// The unit of --client-connections the conversation holds for a client a trusted proxy named
    /// (empty otherwise): given back when the conversation ends.
    ClientUnit client_unit;

protected:
    ~WebSocketChannel() = default;

private:
    csp_ws handle_;
};

/// The worker's topics (csp_publish), from any thread.
class Publisher {
public:
    /// 0, CSP_AGAIN (a subscriber here was past its mark), or -1.
    virtual int publish(std::string_view topic, std::string_view data, bool binary) noexcept = 0;

    /// The process's publisher (null until the worker sets one: csp_publish then gives -1).
    static Publisher* current() noexcept;
    static void set_current(Publisher* publisher) noexcept;

protected:
    ~Publisher() = default;
};

}  // namespace cspd
