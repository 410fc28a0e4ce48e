// Where the cluster's Redis is (--cluster): "redis://HOST:PORT" (port 6379 if left out; an IPv6
// host in brackets) or "redis+unix:///path/to/socket".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cspd {

struct RedisAddress {
    std::string host;        ///< empty for a Unix socket
    unsigned short port = 0;
    std::string unix_path;   ///< empty for TCP

    bool is_unix() const { return !unix_path.empty(); }
    /// As it was given, for logs and /-/status.
    std::string text() const;
};

/// Nullopt, with `why` said, for anything else.
std::optional<RedisAddress> parse_redis_address(std::string_view url, std::string& why);

}  // namespace cspd
