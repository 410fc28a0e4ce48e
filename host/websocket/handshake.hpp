// The opening handshake on the server's side, RFC 6455 §4.2 over HTTP/1.1 and RFC 8441's extended
// CONNECT over HTTP/2: whether a request asks for a WebSocket (and what to answer one that asks
// wrongly), and the answer that accepts it (101, or HTTP/2's 200).
#pragma once

#include "http/request.hpp"

#include <string>
#include <string_view>

namespace cspd::ws {

/// What a request is, as an opening handshake.
enum class Handshake {
    valid,          ///< GET, Upgrade: websocket, Connection: upgrade, a 16-byte key, version 13 (HTTP/1.1);
                    ///< CONNECT, :protocol websocket, version 13 (HTTP/2)
    not_websocket,  ///< no Upgrade: websocket -- answer 426 with Upgrade: websocket (RFC 9110 §15.5.22)
    bad_version,    ///< Sec-WebSocket-Version is not 13 -- answer 426 with Sec-WebSocket-Version: 13 (§4.4)
    malformed,      ///< it asks for a WebSocket but is not a valid handshake -- answer 400
};

/// Checks `request` (HTTP/1.1 or HTTP/2) as an opening handshake.
Handshake check_handshake(const HttpRequest& request);

/// The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key (§4.2.2).
std::string accept_key(std::string_view client_key);

/// Whether the client offered `protocol` in its Sec-WebSocket-Protocol fields.
bool offers_protocol(const HttpRequest& request, std::string_view protocol);

/// Whether a comma-separated field value lists `token` (compared without case).
bool lists_token(std::string_view value, std::string_view token);

}  // namespace cspd::ws
