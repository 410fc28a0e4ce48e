// permessage-deflate (RFC 7692): what the server answers a client's offer, and one message
// compressed or inflated at a time. cspd always asks for no context takeover in both directions
// (§7.1.1): each message is compressed alone, so no connection keeps a zlib state between messages
// (an idle WebSocket stays small), and one compressor per thread serves every connection.
#pragma once

#include "http/request.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace cspd::ws {

/// The Sec-WebSocket-Extensions value that accepts the first permessage-deflate offer of `request`
/// this server can honour; none if there is no such offer (the conversation is not compressed).
std::optional<std::string> accept_deflate(const HttpRequest& request);

/// Compresses `message` as one permessage-deflate message (without the final 00 00 FF FF), appended
/// to `out`; false if zlib failed (send it uncompressed). This thread's compressor.
bool deflate_message(std::string_view message, std::string& out);

enum class Inflated { ok, too_big, corrupt };
/// Inflates one whole compressed message (its fragments' payloads joined) into `out`, at most
/// `limit` bytes: past it, too_big (as soon as it is seen: a small frame cannot inflate further).
/// This thread's decompressor.
Inflated inflate_message(std::string_view compressed, std::string& out, std::size_t limit);

/// Messages shorter than this are sent as they are: compressing them gains nothing.
constexpr std::size_t kDeflateFrom = 128;

}  // namespace cspd::ws
