#include "handler/handler_config.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(HandlerConfig, ConfLinesAreKeysAndValuesTrimmedWithCommentsSkipped) {
    std::string error;
    const HandlerConfig c = HandlerConfig::parse_conf("# a comment\n\n  a = 1 \r\n; another\nb=two words\n"
                                                      "c = \"  kept  \"\nd =\nx.y-z_9 = =\n",
                                                      error);
    ASSERT_EQ(error, "");
    ASSERT_EQ(c.entries().size(), 5u);
    EXPECT_EQ(*c.find("a"), "1");
    EXPECT_EQ(*c.find("b"), "two words");
    EXPECT_EQ(*c.find("c"), "  kept  ");
    EXPECT_EQ(*c.find("d"), "");
    EXPECT_EQ(*c.find("x.y-z_9"), "=");
    EXPECT_EQ(c.find("missing"), nullptr);
    EXPECT_EQ(c.entries().front().first, "a");  // the file's order
}

TEST(HandlerConfig, ConfErrorsSayWhichLine) {
    std::string error;
    HandlerConfig::parse_conf("a = 1\nno equals\n", error);
    EXPECT_EQ(error, "line 2 is not \"key = value\"");
    error.clear();
    HandlerConfig::parse_conf("a = 1\na = 2\n", error);
    EXPECT_EQ(error, "line 2: key \"a\" is given twice");
    error.clear();
    HandlerConfig::parse_conf("bad key = 1\n", error);
    EXPECT_EQ(error, "line 1: key \"bad key\" is not 1 to 128 characters of A-Z a-z 0-9 _ . -");
    error.clear();
    HandlerConfig::parse_conf(" = 1\n", error);
    EXPECT_NE(error, "");
}

TEST(HandlerConfig, JsonObjectsFlattenToDottedKeys) {
    std::string error;
    const HandlerConfig c =
        HandlerConfig::parse_json(R"({"s": "text", "n": 1.5, "t": true, "z": null, "o": {"p": {"q": "deep"}}, "a": [1, "x"]})",
                                  error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(*c.find("s"), "text");
    EXPECT_EQ(*c.find("n"), "1.5");
    EXPECT_EQ(*c.find("t"), "true");
    EXPECT_EQ(*c.find("z"), "");
    EXPECT_EQ(*c.find("o.p.q"), "deep");
    EXPECT_EQ(*c.find("a"), R"([1,"x"])");
}

TEST(HandlerConfig, JsonThatIsNotAnObjectIsRefused) {
    std::string error;
    HandlerConfig::parse_json("[1, 2]", error);
    EXPECT_EQ(error, "not a JSON object");
    error.clear();
    HandlerConfig::parse_json("{\"a\": ", error);
    EXPECT_EQ(error, "not valid JSON");
    error.clear();
    HandlerConfig::parse_json(R"({"a.b": 1, "a": {"b": 2}})", error);
    EXPECT_EQ(error, "key \"a.b\" is given twice");
}

}  // namespace
}  // namespace cspd
