#include "http/cookie_header.hpp"
#include "http/form_fields.hpp"
#include "http/request_id.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cspd {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs fields(std::string_view text) {
    Pairs out;
    for_each_form_field(text, [&](std::string_view name, std::string_view value) {
        out.emplace_back(name, value);
        return true;
    });
    return out;
}

Pairs cookies(std::string_view header) {
    Pairs out;
    for_each_cookie(header, [&](std::string_view name, std::string_view value) {
        out.emplace_back(name, value);
        return true;
    });
    return out;
}

// ---- for_each_form_field ------------------------------------------------------

TEST(FormFields, GivesPairsInOrderRawAndRepeated) {
    EXPECT_EQ(fields("b=2&a=1&b=3"), (Pairs{{"b", "2"}, {"a", "1"}, {"b", "3"}}));
    EXPECT_EQ(fields("x=a+b%20c"), (Pairs{{"x", "a+b%20c"}}));  // the caller decodes
    EXPECT_EQ(fields("k=v=w"), (Pairs{{"k", "v=w"}}));           // the first '=' splits
}

TEST(FormFields, SkipsEmptyPairs) {
    EXPECT_TRUE(fields("").empty());
    EXPECT_TRUE(fields("&").empty());
    EXPECT_TRUE(fields("&&&").empty());
    EXPECT_EQ(fields("&a=1&&b=2&"), (Pairs{{"a", "1"}, {"b", "2"}}));
}

TEST(FormFields, NameWithoutEqualsHasAnEmptyValue) {
    EXPECT_EQ(fields("flag&a=1"), (Pairs{{"flag", ""}, {"a", "1"}}));
    EXPECT_EQ(fields("a="), (Pairs{{"a", ""}}));
    EXPECT_EQ(fields("=v"), (Pairs{{"", "v"}}));  // an empty name is still a pair
    EXPECT_EQ(fields("="), (Pairs{{"", ""}}));
}

TEST(FormFields, ViewsPointIntoTheText) {
    const std::string text = "name=value&flag";
    std::vector<std::string_view> seen;
    for_each_form_field(text, [&](std::string_view name, std::string_view value) {
        seen.push_back(name);
        seen.push_back(value);
        return true;
    });
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[0].data(), text.data());
    EXPECT_EQ(seen[1].data(), text.data() + 5);
    EXPECT_EQ(seen[2].data(), text.data() + 11);
    EXPECT_TRUE(seen[3].empty());
}

TEST(FormFields, StopsWhenTheCallbackSaysSo) {
    int calls = 0;
    for_each_form_field("a=1&b=2&c=3", [&](std::string_view name, std::string_view) {
        ++calls;
        return name != "b";
    });
    EXPECT_EQ(calls, 2);
}

TEST(FormFields, RecognisesTheFormContentType) {
    EXPECT_TRUE(is_form_urlencoded("application/x-www-form-urlencoded"));
    EXPECT_TRUE(is_form_urlencoded("application/x-www-form-urlencoded; charset=utf-8"));
    EXPECT_TRUE(is_form_urlencoded("application/x-www-form-urlencoded;charset=UTF-8"));
    EXPECT_TRUE(is_form_urlencoded("Application/X-WWW-Form-URLEncoded"));
    EXPECT_TRUE(is_form_urlencoded("application/x-www-form-urlencoded ; charset=utf-8"));
    EXPECT_TRUE(is_form_urlencoded("application/x-www-form-urlencoded\t"));
}

TEST(FormFields, RefusesOtherContentTypes) {
    for (const char* other : {"", "application/x-www-form-urlencodedX", "application/x-www-form-urlencoded-v2",
                              "application/x-www-form-urlencode", "application/x-www-form", "multipart/form-data",
                              "application/json", "text/plain", " application/x-www-form-urlencoded",
                              "xapplication/x-www-form-urlencoded", "application/x-www-form-urlencoded,text/plain"})
        EXPECT_FALSE(is_form_urlencoded(other)) << other;
}

// ---- for_each_cookie ------------------------------------------------------------

TEST(CookieHeader, GivesPairsInOrder) {
    EXPECT_EQ(cookies("a=1; b=2"), (Pairs{{"a", "1"}, {"b", "2"}}));
    EXPECT_EQ(cookies("a=1;b=2"), (Pairs{{"a", "1"}, {"b", "2"}}));
    EXPECT_EQ(cookies("a=1; a=2"), (Pairs{{"a", "1"}, {"a", "2"}}));  // repeated names kept
    EXPECT_EQ(cookies("tok=a=b=="), (Pairs{{"tok", "a=b=="}}));       // the first '=' splits
}

TEST(CookieHeader, TrimsSpacesAndTabsAroundNamesAndValues) {
    EXPECT_EQ(cookies("  a = 1 ;\tb\t=\t2\t; "), (Pairs{{"a", "1"}, {"b", "2"}}));
    EXPECT_EQ(cookies("a=x y"), (Pairs{{"a", "x y"}}));  // inner spaces are kept
    EXPECT_EQ(cookies("my name=v"), (Pairs{{"my name", "v"}}));
}

TEST(CookieHeader, RemovesOnePairOfQuotes) {
    EXPECT_EQ(cookies("a=\"quoted\""), (Pairs{{"a", "quoted"}}));
    EXPECT_EQ(cookies("a= \"q\" "), (Pairs{{"a", "q"}}));  // trimmed first
    EXPECT_EQ(cookies("a=\"\""), (Pairs{{"a", ""}}));
    EXPECT_EQ(cookies("a=\"\"x\"\""), (Pairs{{"a", "\"x\""}}));  // only one pair
    EXPECT_EQ(cookies("a=\""), (Pairs{{"a", "\""}}));            // a lone quote stays
    EXPECT_EQ(cookies("a=\"open"), (Pairs{{"a", "\"open"}}));
    EXPECT_EQ(cookies("a=close\""), (Pairs{{"a", "close\""}}));
}

TEST(CookieHeader, SkipsPairsWithoutEqualsAndEmptyNames) {
    EXPECT_EQ(cookies("lonely; a=1"), (Pairs{{"a", "1"}}));
    EXPECT_EQ(cookies("=1; a=2"), (Pairs{{"a", "2"}}));
    EXPECT_EQ(cookies("  =1; b=2"), (Pairs{{"b", "2"}}));
    EXPECT_EQ(cookies("a=; b"), (Pairs{{"a", ""}}));  // an empty value is kept
    EXPECT_TRUE(cookies("").empty());
    EXPECT_TRUE(cookies(";;; ;").empty());
    EXPECT_TRUE(cookies("no-equals-at-all").empty());
}

TEST(CookieHeader, StopsWhenTheCallbackSaysSo) {
    std::vector<std::string> names;
    for_each_cookie("a=1; b=2; c=3", [&](std::string_view name, std::string_view) {
        names.emplace_back(name);
        return name != "b";
    });
    EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

// ---- request ids ----------------------------------------------------------------

std::string format(std::uint32_t prefix, std::uint64_t number) {
    char out[RequestId::kMaxText];
    return std::string(RequestId{prefix, number}.format(out));
}

TEST(RequestIdFormat, WritesPrefixDashAndNumberInHex) {
    EXPECT_EQ(format(0x5f3a9c01, 0x2a), "5f3a9c01-2a");
    EXPECT_EQ(format(0x5f3a9c01, 42), "5f3a9c01-2a");
    EXPECT_EQ(format(0xdeadbeef, 0x10), "deadbeef-10");
    EXPECT_EQ(format(0xdeadbeef, 0x1000000000), "deadbeef-1000000000");
}

TEST(RequestIdFormat, PadsThePrefixButNotTheNumber) {
    EXPECT_EQ(format(0, 0), "00000000-0");
    EXPECT_EQ(format(1, 0), "00000001-0");
    EXPECT_EQ(format(0x00ab0000, 1), "00ab0000-1");
}

TEST(RequestIdFormat, FillsKMaxTextAtMost) {
    const std::string longest = format(0xffffffff, ~std::uint64_t{0});
    EXPECT_EQ(longest, "ffffffff-ffffffffffffffff");
    EXPECT_EQ(longest.size(), RequestId::kMaxText);
    EXPECT_EQ(format(1, std::uint64_t{1} << 63), "00000001-8000000000000000");
}

TEST(RequestIdFormat, ViewPointsIntoTheBuffer) {
    char out[RequestId::kMaxText];
    const std::string_view id = RequestId{7, 7}.format(out);
    EXPECT_EQ(id.data(), out);
}

TEST(RequestIdSanity, AcceptsTheDocumentedAlphabet) {
    EXPECT_TRUE(is_sane_request_id("a"));
    EXPECT_TRUE(is_sane_request_id("AZaz09-_.:/+=@"));
    EXPECT_TRUE(is_sane_request_id("5f3a9c01-2a"));
    EXPECT_TRUE(is_sane_request_id("550e8400-e29b-41d4-a716-446655440000"));
    EXPECT_TRUE(is_sane_request_id("Root=1-67891233-abcdef012345678912345678"));  // AWS trace id
    EXPECT_TRUE(is_sane_request_id(std::string(128, 'x')));
}

TEST(RequestIdSanity, RefusesEmptyLongAndOtherCharacters) {
    EXPECT_FALSE(is_sane_request_id(""));
    EXPECT_FALSE(is_sane_request_id(std::string(129, 'x')));
    for (const char* bad : {"a b", "a\tb", "a\r\nX-Evil: 1", "a\nb", "a;b", "a,b", "a\"b", "a'b", "a<b", "a>b",
                            "a\\b", "a%b", "a?b", "a#b", "a&b", "a*b", "a!b", "a~b", "\xc3\xa9", "a\x7f"})
        EXPECT_FALSE(is_sane_request_id(bad)) << bad;
    EXPECT_FALSE(is_sane_request_id(std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace cspd
