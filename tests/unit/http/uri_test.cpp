#include "http/uri.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(Uri, SplitsPathAndQuery) {
    auto t = split_target("/csp/greet?name=Eva&x=1");
    EXPECT_EQ(t.path, "/csp/greet");
    EXPECT_EQ(t.query, "name=Eva&x=1");
    auto plain = split_target("/a/b");
    EXPECT_EQ(plain.path, "/a/b");
    EXPECT_TRUE(plain.query.empty());
}

TEST(Uri, PercentDecodes) {
    std::string out;
    EXPECT_TRUE(percent_decode("/a%20b%2Fc", out, false));
    EXPECT_EQ(out, "/a b/c");
    out.clear();
    EXPECT_TRUE(percent_decode("a+b%2b", out, true));
    EXPECT_EQ(out, "a b+");
    out.clear();
    EXPECT_TRUE(percent_decode("a+b", out, false));
    EXPECT_EQ(out, "a+b");
}

TEST(Uri, RejectsBadEscapesAndNul) {
    for (const char* bad : {"%", "%4", "%zz", "abc%", "%00", "x%0"}) {
        std::string out;
        EXPECT_FALSE(percent_decode(bad, out, false)) << bad;
    }
}

TEST(Uri, FindsUnsafeSegments) {
    for (const char* bad : {"/..", "/a/../b", "/../etc/passwd", "/a/./b", "/a\\b", "/.."})
        EXPECT_TRUE(has_unsafe_segment(bad)) << bad;
    for (const char* good : {"/", "/a/b", "/a..b", "/.well-known/x", "/a/...", "/index.html"})
        EXPECT_FALSE(has_unsafe_segment(good)) << good;
}

TEST(Uri, FindsHiddenSegments) {
    for (const char* hidden : {"/.git/config", "/.env", "/a/.htpasswd", "/.well-known/../.git"})
        EXPECT_TRUE(has_hidden_segment(hidden)) << hidden;
    for (const char* shown : {"/", "/a.b/c", "/.well-known/acme-challenge/x", "/.well-known", "/a/b.txt"})
        EXPECT_FALSE(has_hidden_segment(shown)) << shown;
}

}  // namespace
}  // namespace cspd
