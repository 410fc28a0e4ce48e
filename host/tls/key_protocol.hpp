// What a worker and the key process say to each other over a Unix stream socket: length-
// prefixed frames, one request and then its answer. A request asks for the certificates that
// serve (unless the caller already has that generation) or for one signature by a key the key
// process holds; it can never ask for a key itself, nor name a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cspd::key_protocol {

enum class Op : std::uint8_t {
    list = 1,            ///< `id`: the generation the caller has; answer: unchanged, or the listing (JSON)
    sign_ecdsa = 2,      ///< `id`: the key; payload: the digest; answer: a DER ECDSA-Sig-Value
    sign_rsa_pkcs1 = 3,  ///< `id`: the key; payload: a DigestInfo; answer: the PKCS#1 v1.5 signature
    sign_rsa_pss = 4,    ///< `id`: the key; payload: an EMSA-PSS encoded block; answer: its RSA signature
};

enum class Answer : std::uint8_t {
    ok = 0,
    unchanged = 1,  ///< list: the caller's generation is current
    refused = 2,    ///< unknown key, or a block that is not what the op says
    failed = 3,     ///< the operation failed in OpenSSL
};

struct Frame {
    std::uint8_t kind = 0;  ///< an Op (requests) or an Answer (answers)
    std::uint64_t id = 0;
    std::string payload;
};

/// Frames larger than this are refused (a listing of many certificates stays well under it).
inline constexpr std::size_t kMaxFrame = 8 * 1024 * 1024;

/// The bytes of a frame: u32 length of what follows, u8 kind, u64 id, payload.
std::string encode(std::uint8_t kind, std::uint64_t id, std::string_view payload);
/// Takes one whole frame off the front of `buffer`, if it holds one. `bad` is set (and nothing
/// taken) for a frame over kMaxFrame or too short to be one.
std::optional<Frame> take(std::string& buffer, bool& bad);

/// A blocking exchange on `fd`: sends `request`, waits at most `timeout_ms` in all for the
/// answer. nullopt if the peer is gone, too slow, or says nonsense.
std::optional<Frame> ask(int fd, std::string_view request, int timeout_ms);

}  // namespace cspd::key_protocol
