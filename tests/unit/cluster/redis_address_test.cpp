#include "cluster/redis_address.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

namespace cspd {
namespace {

/// The address `url` gives, failing the test (with why) if it is refused.
RedisAddress address_of(std::string_view url) {
    std::string why;
    const std::optional<RedisAddress> parsed = parse_redis_address(url, why);
    EXPECT_TRUE(parsed.has_value()) << url << ": " << why;
    EXPECT_EQ(why, "") << url;
    return parsed.value_or(RedisAddress{});
}

/// Why `url` is refused; fails the test if it is not.
std::string address_refusal(std::string_view url) {
    std::string why;
    const std::optional<RedisAddress> parsed = parse_redis_address(url, why);
    EXPECT_FALSE(parsed.has_value()) << url << " was taken as " << (parsed ? parsed->text() : "");
    EXPECT_NE(why, "") << url;
    return why;
}

TEST(RedisAddress, TakesAHostAndPort) {
    const RedisAddress parsed = address_of("redis://cache.internal:6380");
    EXPECT_EQ(parsed.host, "cache.internal");
    EXPECT_EQ(parsed.port, 6380);
    EXPECT_FALSE(parsed.is_unix());
    EXPECT_EQ(parsed.unix_path, "");
    EXPECT_EQ(parsed.text(), "redis://cache.internal:6380");

    const RedisAddress v4 = address_of("redis://127.0.0.1:1");
    EXPECT_EQ(v4.host, "127.0.0.1");
    EXPECT_EQ(v4.port, 1);
    EXPECT_EQ(address_of("redis://h:65535").port, 65535);
    EXPECT_EQ(address_of("redis://h:06380").port, 6380);
}

TEST(RedisAddress, PortDefaultsTo6379) {
    const RedisAddress parsed = address_of("redis://localhost");
    EXPECT_EQ(parsed.host, "localhost");
    EXPECT_EQ(parsed.port, 6379);
    EXPECT_EQ(parsed.text(), "redis://localhost:6379");
    EXPECT_EQ(address_of("redis://[::1]").port, 6379);
}

TEST(RedisAddress, TakesOneTrailingSlash) {
    EXPECT_EQ(address_of("redis://h:6380/").port, 6380);
    EXPECT_EQ(address_of("redis://h/").port, 6379);
    EXPECT_EQ(address_of("redis://h/").host, "h");
    address_refusal("redis://h:6380//");
}

TEST(RedisAddress, TakesAnIPv6AddressInBrackets) {
    const RedisAddress parsed = address_of("redis://[::1]:6380");
    EXPECT_EQ(parsed.host, "::1");
    EXPECT_EQ(parsed.port, 6380);
    EXPECT_EQ(parsed.text(), "redis://[::1]:6380");
    EXPECT_EQ(address_of("redis://[fd00::2:3]:7000").host, "fd00::2:3");
}

TEST(RedisAddress, RefusesAnIPv6AddressBadlyBracketed) {
    for (const std::string_view url : {"redis://[::1:6380", "redis://[::1]6380", "redis://[::1]x:6380", "redis://[]:6380",
                                       "redis://[]", "redis://[::1]:", "redis://::1:6380"})
        address_refusal(url);
}

TEST(RedisAddress, RefusesBadPorts) {
    for (const std::string_view url : {"redis://h:0", "redis://h:65536", "redis://h:70000", "redis://h:99999999999",
                                       "redis://h:abc", "redis://h:63x", "redis://h:-1", "redis://h:+1", "redis://h: 1",
                                       "redis://h:", "redis://h:6379:1", "redis://[::1]:0", "redis://[::1]:x"}) {
        const std::string why = address_refusal(url);
        EXPECT_NE(why.find("port"), std::string::npos) << url << ": " << why;
    }
}

TEST(RedisAddress, RefusesAMissingHost) {
    for (const std::string_view url : {"redis://", "redis://:6379", "redis:///", "redis://:"}) address_refusal(url);
}

TEST(RedisAddress, RefusesAUserPasswordDatabaseOrOptions) {
    for (const std::string_view url : {"redis://user:secret@h:6379", "redis://:secret@h", "redis://user@h",
                                       "redis://h:6379/0", "redis://h/0", "redis://h:6379?timeout=1",
                                       "redis://h#x"}) {
        const std::string why = address_refusal(url);
        EXPECT_NE(why.find("password"), std::string::npos) << url << ": " << why;
    }
}

TEST(RedisAddress, TakesAUnixSocket) {
    const RedisAddress parsed = address_of("redis+unix:///run/redis/redis.sock");
    EXPECT_TRUE(parsed.is_unix());
    EXPECT_EQ(parsed.unix_path, "/run/redis/redis.sock");
    EXPECT_EQ(parsed.host, "");
    EXPECT_EQ(parsed.text(), "redis+unix:///run/redis/redis.sock");
}

TEST(RedisAddress, RefusesARelativeOrEmptyUnixPath) {
    for (const std::string_view url : {"redis+unix://run/redis.sock", "redis+unix://redis.sock", "redis+unix://"}) {
        const std::string why = address_refusal(url);
        EXPECT_NE(why.find("absolute"), std::string::npos) << url << ": " << why;
    }
}

TEST(RedisAddress, RefusesOtherSchemes) {
    for (const std::string_view url : {"", "localhost:6379", "rediss://h:6379", "http://h:6379", "unix:///run/r.sock",
                                       "redis:/h:6379", "redis:h", "tcp://h:6379", " redis://h:6379"})
        address_refusal(url);
}

TEST(RedisAddress, TextReadsBackAsTheSameAddress) {
    for (const std::string_view url : {"redis://h:6379", "redis://cache.internal:1", "redis://[::1]:6380",
                                       "redis+unix:///tmp/redis.sock"}) {
        const RedisAddress first = address_of(url);
        EXPECT_EQ(first.text(), url);
        const RedisAddress again = address_of(first.text());
        EXPECT_EQ(again.host, first.host) << url;
        EXPECT_EQ(again.port, first.port) << url;
        EXPECT_EQ(again.unix_path, first.unix_path) << url;
    }
}

}  // namespace
}  // namespace cspd
