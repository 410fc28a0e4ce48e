#include "websocket/handshake.hpp"

#include "common/ascii.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace cspd::ws {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool is_base64_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/// A key is the base64 of 16 bytes: 22 characters and "==" (§4.1).
bool is_client_key(std::string_view key) {
    key = trim_ows(key);
    if (key.size() != 24 || key.substr(22) != "==") return false;
    for (std::size_t i = 0; i < 22; ++i)
        if (!is_base64_char(key[i])) return false;
    // The last character before the padding holds only 2 bits of the 16th byte.
    return std::string_view("AQgw").find(key[21]) != std::string_view::npos;
}

/// Every value of field `name`, joined as one list.
template <class Visit>
void for_each_value(const HttpRequest& request, std::string_view name, Visit visit) {
    for (const HttpHeader& h : request.headers)
        if (iequals(h.name, name)) visit(h.value);
}

}  // namespace

bool lists_token(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (iequals(trim_ows(value.substr(0, comma)), token)) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

Handshake check_handshake(const HttpRequest& request) {
    if (request.http_major == 2) {
        // RFC 8441 §4: an extended CONNECT whose :protocol is "websocket"; no key, no Upgrade.
        if (request.method != "CONNECT" || request.protocol.empty()) return Handshake::not_websocket;
        if (request.protocol != "websocket") return Handshake::malformed;
        const std::string_view version = trim_ows(request.header("sec-websocket-version"));
        if (version != "13") return version.data() ? Handshake::bad_version : Handshake::malformed;
        return Handshake::valid;
    }
    bool upgrade = false;
    for_each_value(request, "upgrade", [&](std::string_view v) { upgrade = upgrade || lists_token(v, "websocket"); });
    if (!upgrade) return Handshake::not_websocket;
    const std::string_view version = trim_ows(request.header("sec-websocket-version"));
    if (version != "13") return version.data() ? Handshake::bad_version : Handshake::malformed;
    bool connection = false;
    for_each_value(request, "connection",
                   [&](std::string_view v) { connection = connection || lists_token(v, "upgrade"); });
    if (request.method != "GET" || !connection || request.http_major != 1 || request.http_minor < 1)
        return Handshake::malformed;
    int keys = 0;
    bool key_ok = false;
    for_each_value(request, "sec-websocket-key", [&](std::string_view v) {
        ++keys;
        key_ok = is_client_key(v);
    });
    if (keys != 1 || !key_ok || !request.header("host").data()) return Handshake::malformed;
    return Handshake::valid;
}

std::string accept_key(std::string_view client_key) {
    client_key = trim_ows(client_key);
    std::string keyed;
    keyed.reserve(client_key.size() + kGuid.size());
    keyed.append(client_key).append(kGuid);
    unsigned char digest[SHA_DIGEST_LENGTH];
    unsigned int digest_size = 0;
    EVP_Digest(keyed.data(), keyed.size(), digest, &digest_size, EVP_sha1(), nullptr);
    char text[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text), digest, SHA_DIGEST_LENGTH);
    return std::string(text, static_cast<std::size_t>(n));
}

bool offers_protocol(const HttpRequest& request, std::string_view protocol) {
    bool offered = false;
    for_each_value(request, "sec-websocket-protocol", [&](std::string_view v) {
        // Subprotocol names are compared exactly (§4.1: they are tokens, case matters).
        while (!v.empty() && !offered) {
            const std::size_t comma = v.find(',');
            offered = trim_ows(v.substr(0, comma)) == protocol;
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    });
    return offered;
}

}  // namespace cspd::ws
