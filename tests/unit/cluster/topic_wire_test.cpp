#include "cluster/topic_wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cspd::topic_wire {
namespace {

// --- keys and channels ----------------------------------------------------------------------

TEST(TopicWire, NamesATopicsKeysAndChannel) {
    EXPECT_EQ(meta_key("room"), "cspd:{room}:m");
    EXPECT_EQ(stream_key("room"), "cspd:{room}:s");
    EXPECT_EQ(channel("room"), "cspd:c:room");
}

TEST(TopicWire, ATopicsChannelGivesTheTopicBack) {
    for (const std::string_view topic : {"room", "a:b", "{x}", "with space", "cspd:c:nested", "é"}) {
        const std::string name = channel(topic);
        EXPECT_EQ(topic_of_channel(name), topic) << name;
    }
}

TEST(TopicWire, AChannelNotOursHasNoTopic) {
    for (const std::string_view name : {"", "cspd:c:", "cspd:c", "cspd:{room}:m", "cspd:{room}:s", "other:c:room",
                                        "CSPD:C:room", " cspd:c:room"})
        EXPECT_EQ(topic_of_channel(name), "") << '"' << name << '"';
}

// --- live messages --------------------------------------------------------------------------

TEST(TopicWire, ParsesALiveMessage) {
    ClusterMessage parsed;
    ASSERT_TRUE(parse_live("host1.7 42 1700000000000-3 host1 t\nhello", parsed));
    EXPECT_EQ(parsed.epoch, "host1.7");
    EXPECT_EQ(parsed.offset, 42u);
    EXPECT_EQ(parsed.id, "1700000000000-3");
    EXPECT_EQ(parsed.origin, "host1");
    EXPECT_FALSE(parsed.binary);
    EXPECT_EQ(parsed.data, "hello");
}

TEST(TopicWire, ParsesABinaryLiveMessage) {
    const std::string payload = std::string("e 1 1-0 h b\n") + std::string("\0\xff\r\n", 4);
    ClusterMessage parsed;
    ASSERT_TRUE(parse_live(payload, parsed));
    EXPECT_TRUE(parsed.binary);
    EXPECT_EQ(parsed.data, std::string_view("\0\xff\r\n", 4));
}

TEST(TopicWire, KeepsLiveDataWholeWithItsNewlinesAndSpaces) {
    ClusterMessage parsed;
    ASSERT_TRUE(parse_live("e 18446744073709551615 1-0 h t\n line one \n\nline two t\n", parsed));
    EXPECT_EQ(parsed.offset, 18446744073709551615u);
    EXPECT_EQ(parsed.data, " line one \n\nline two t\n");
    ASSERT_TRUE(parse_live("e 1 1-0 h t\n", parsed));
    EXPECT_EQ(parsed.data, "");
}

TEST(TopicWire, RefusesLiveMessagesMissingAField) {
    const std::vector<std::string_view> payloads = {
        "",
        "\n",
        "e 1 1-0 h t",     // no line end
        "e 1 1-0 h\nx",    // no flag
        "e 1 1-0 t\nx",    // no origin
        "e 1 t\nx",
        "e\nx",
        " 1 1-0 h t\nx",   // an empty epoch
        "e 1  h t\nx",     // an empty id
        "e 1 1-0  t\nx",   // an empty origin
    };
    for (const std::string_view payload : payloads) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_live(payload, parsed)) << '"' << payload << '"';
    }
}

TEST(TopicWire, RefusesLiveMessagesWithABadOffset) {
    for (const std::string_view payload : {"e 0 1-0 h t\nx", "e x 1-0 h t\nx", "e  1-0 h t\nx", "e -1 1-0 h t\nx",
                                           "e +1 1-0 h t\nx", "e 7x 1-0 h t\nx", "e 0x7 1-0 h t\nx",
                                           "e 18446744073709551616 1-0 h t\nx"}) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_live(payload, parsed)) << '"' << payload << '"';
    }
}

TEST(TopicWire, RefusesLiveMessagesWithABadFlag) {
    for (const std::string_view payload : {"e 1 1-0 h x\nd", "e 1 1-0 h \nd", "e 1 1-0 h T\nd", "e 1 1-0 h tb\nd",
                                           "e 1 1-0 h t extra\nd", "e 1 1-0 h t \nd", "e 1 1-0 h t\r\nd"}) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_live(payload, parsed)) << '"' << payload << '"';
    }
}

TEST(TopicWire, ParsesASkipMarker) {
    ClusterMessage parsed;
    ASSERT_TRUE(parse_live("e 9 0-0 h s\n", parsed));
    EXPECT_TRUE(parsed.skip);
    EXPECT_EQ(parsed.offset, 9u);
    EXPECT_EQ(parsed.origin, "h");
    EXPECT_TRUE(parsed.data.empty());
    ASSERT_TRUE(parse_live("e 1 1-0 h t\nd", parsed));
    EXPECT_FALSE(parsed.skip);
}

// --- history entries ------------------------------------------------------------------------

resp::Value wire_bulk(std::string text) {
    resp::Value value;
    value.type = resp::Type::bulk;
    value.text = std::move(text);
    return value;
}

resp::Value wire_array(std::vector<resp::Value> items) {
    resp::Value value;
    value.type = resp::Type::array;
    value.items = std::move(items);
    return value;
}

/// An entry as XRANGE gives it: [id, [field, value, ...]].
resp::Value wire_entry(std::string id, const std::vector<std::string>& fields) {
    std::vector<resp::Value> pairs;
    for (const std::string& field : fields) pairs.push_back(wire_bulk(field));
    return wire_array({wire_bulk(std::move(id)), wire_array(std::move(pairs))});
}

TEST(TopicWire, ParsesAHistoryEntry) {
    const resp::Value entry = wire_entry("1700000000000-0", {"o", "7", "h", "host1", "f", "t", "d", "a b\nc"});
    ClusterMessage parsed;
    ASSERT_TRUE(parse_entry(entry, "host1.1", parsed));
    EXPECT_EQ(parsed.epoch, "host1.1");
    EXPECT_EQ(parsed.offset, 7u);
    EXPECT_EQ(parsed.id, "1700000000000-0");
    EXPECT_EQ(parsed.origin, "host1");
    EXPECT_FALSE(parsed.binary);
    EXPECT_EQ(parsed.data, "a b\nc");
}

TEST(TopicWire, ParsesAHistoryEntryWhateverItsFieldsOrder) {
    const resp::Value entry =
        wire_entry("5-1", {"d", std::string("\0\xff", 2), "x", "ignored", "f", "b", "h", "h2", "o", "3"});
    ClusterMessage parsed;
    ASSERT_TRUE(parse_entry(entry, "e", parsed));
    EXPECT_EQ(parsed.offset, 3u);
    EXPECT_EQ(parsed.id, "5-1");
    EXPECT_EQ(parsed.origin, "h2");
    EXPECT_TRUE(parsed.binary);
    EXPECT_EQ(parsed.data, std::string_view("\0\xff", 2));

    const resp::Value other = wire_entry("5-2", {"h", "h3", "d", "", "o", "4", "f", "t"});  // outlives its views
    ASSERT_TRUE(parse_entry(other, "e", parsed));
    EXPECT_EQ(parsed.offset, 4u);
    EXPECT_EQ(parsed.origin, "h3");
    EXPECT_FALSE(parsed.binary);  // nothing kept from the last one
    EXPECT_EQ(parsed.data, "");
}

TEST(TopicWire, RefusesAHistoryEntryMissingAField) {
    const std::vector<std::vector<std::string>> cases = {
        {"h", "h", "f", "t", "d", "x"},            // no o
        {"o", "1", "f", "t", "d", "x"},            // no h
        {"o", "1", "h", "", "f", "t", "d", "x"},   // an empty h
        {"o", "1", "h", "h", "d", "x"},            // no f
        {"o", "1", "h", "h", "f", "t"},            // no d
        {},
    };
    for (const std::vector<std::string>& fields : cases) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_entry(wire_entry("1-0", fields), "e", parsed)) << ::testing::PrintToString(fields);
    }
}

TEST(TopicWire, RefusesAHistoryEntryWithABadOffsetOrFlag) {
    for (const std::string_view offset : {"0", "x", "", "-1", "1.5"}) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_entry(wire_entry("1-0", {"o", std::string(offset), "h", "h", "f", "t", "d", "x"}), "e",
                                 parsed))
            << offset;
    }
    for (const std::string_view flag : {"x", "", "T", "tb"}) {
        ClusterMessage parsed;
        EXPECT_FALSE(
            parse_entry(wire_entry("1-0", {"o", "1", "h", "h", "f", std::string(flag), "d", "x"}), "e", parsed))
            << flag;
    }
}

TEST(TopicWire, RefusesAHistoryEntryOfTheWrongShape) {
    const resp::Value good_fields = wire_entry("1-0", {"o", "1", "h", "h", "f", "t", "d", "x"}).items[1];
    resp::Value integer;
    integer.type = resp::Type::integer;
    integer.integer = 1;
    resp::Value simple;
    simple.type = resp::Type::simple;
    simple.text = "1-0";
    const resp::Value null;

    std::vector<std::pair<std::string, resp::Value>> cases;
    cases.emplace_back("a bulk string", wire_bulk("1-0"));
    cases.emplace_back("null", null);
    cases.emplace_back("an empty array", wire_array({}));
    cases.emplace_back("the id alone", wire_array({wire_bulk("1-0")}));
    cases.emplace_back("three items", wire_array({wire_bulk("1-0"), good_fields, good_fields}));
    cases.emplace_back("an integer id", wire_array({integer, good_fields}));
    cases.emplace_back("a simple-string id", wire_array({simple, good_fields}));
    cases.emplace_back("fields as a bulk string", wire_array({wire_bulk("1-0"), wire_bulk("o")}));
    cases.emplace_back("null fields", wire_array({wire_bulk("1-0"), null}));
    cases.emplace_back("fields and id swapped", wire_array({good_fields, wire_bulk("1-0")}));
    resp::Value integer_offset = wire_entry("1-0", {"o", "1", "h", "h", "f", "t", "d", "x"});
    integer_offset.items[1].items[1] = integer;
    cases.emplace_back("an integer offset", integer_offset);
    resp::Value integer_name = wire_entry("1-0", {"o", "1", "h", "h", "f", "t", "d", "x"});
    integer_name.items[1].items[6] = integer;
    cases.emplace_back("an integer field name", integer_name);
    resp::Value nested = wire_entry("1-0", {"o", "1", "h", "h", "f", "t", "d", "x"});
    nested.items[1].items[7] = wire_array({wire_bulk("x")});
    cases.emplace_back("an array as data", nested);

    for (const auto& [what, entry] : cases) {
        ClusterMessage parsed;
        EXPECT_FALSE(parse_entry(entry, "e", parsed)) << what;
    }
    ClusterMessage parsed;
    EXPECT_TRUE(parse_entry(wire_array({wire_bulk("1-0"), good_fields}), "e", parsed));  // the cases' base is good
}

}  // namespace
}  // namespace cspd::topic_wire
