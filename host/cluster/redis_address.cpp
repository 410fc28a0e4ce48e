#include "cluster/redis_address.hpp"

#include <charconv>

namespace cspd {

std::string RedisAddress::text() const {
    if (is_unix()) return "redis+unix://" + unix_path;
    const bool v6 = host.find(':') != std::string::npos;
    return "redis://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<RedisAddress> parse_redis_address(std::string_view url, std::string& why) {
    constexpr std::string_view tcp = "redis://", unix_socket = "redis+unix://";
    RedisAddress address;
    if (url.starts_with(unix_socket)) {
        address.unix_path = url.substr(unix_socket.size());
        if (address.unix_path.empty() || address.unix_path.front() != '/') {
            why = "redis+unix:// takes an absolute path (redis+unix:///run/redis/redis.sock)";
            return std::nullopt;
        }
        return address;
    }
    if (!url.starts_with(tcp)) {
        why = "expected redis://HOST:PORT or redis+unix:///PATH";
        return std::nullopt;
    }
    std::string_view rest = url.substr(tcp.size());
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.find_first_of("/@?#") != std::string_view::npos) {
        why = "no user, password, database or options are taken: redis://HOST:PORT";
        return std::nullopt;
    }
    std::string_view port;
    if (rest.starts_with('[')) {
        const std::size_t close = rest.find(']');
        if (close == std::string_view::npos) {
            why = "an IPv6 address needs its closing bracket";
            return std::nullopt;
        }
        address.host = rest.substr(1, close - 1);
        rest.remove_prefix(close + 1);
        if (!rest.empty() && rest.front() != ':') {
            why = "expected :PORT after the address";
            return std::nullopt;
        }
        if (!rest.empty()) port = rest.substr(1);
    } else {
        const std::size_t colon = rest.find(':');
        address.host = rest.substr(0, colon);
        if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    }
    if (address.host.empty()) {
        why = "no host";
        return std::nullopt;
    }
    address.port = 6379;
    if (!port.data() || port.empty()) {
        if (port.data() && port.empty()) {
            why = "an empty port";
            return std::nullopt;
        }
        return address;
    }
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
        why = "the port is not a number from 1 to 65535";
        return std::nullopt;
    }
    address.port = static_cast<unsigned short>(value);
    return address;
}

}  // namespace cspd
