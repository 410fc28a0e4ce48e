#include "cluster/resp.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cspd::resp {
namespace {

using namespace std::string_literals;

/// A value as one line of text, exact enough to compare: bulk strings quoted with their
/// control bytes escaped, arrays in brackets.
std::string show_resp(const Value& value) {
    switch (value.type) {
    case Type::simple: return "+" + value.text;
    case Type::error: return "-" + value.text;
    case Type::integer: return ":" + std::to_string(value.integer);
    case Type::null: return "nil";
    case Type::bulk: {
        std::string quoted = "\"";
        for (const char c : value.text) {
            if (c == '\r') quoted += "\\r";
            else if (c == '\n') quoted += "\\n";
            else if (c == '\0') quoted += "\\0";
            else if (c == '"' || c == '\\') quoted += std::string("\\") + c;
            else quoted += c;
        }
        return quoted + "\"";
    }
    case Type::array: {
        std::string listed = "[";
        for (const Value& item : value.items) listed += (listed.size() > 1 ? " " : "") + show_resp(item);
        return listed + "]";
    }
    }
    return "?";
}

/// Everything a reader gave for some bytes: the values shown, the last answer and why.
struct RespRead {
    std::vector<std::string> shown;
    std::vector<Value> values;
    Reader::Result last = Reader::Result::need_more;
    std::string why;
    std::size_t buffered = 0;
};

/// Feeds `bytes` in pieces of `piece` bytes (or cut once at `cut`), taking every value after
/// each feed, as a connection would.
RespRead read_resp(std::string_view bytes, Limits limits = {}, std::size_t piece = std::string_view::npos) {
    Reader reader(limits);
    RespRead read;
    std::size_t from = 0;
    do {
        const std::string_view part = bytes.substr(from, piece);
        from += part.size();
        reader.feed(part);
        Value value;
        while ((read.last = reader.next(value)) == Reader::Result::value) {
            read.shown.push_back(show_resp(value));
            read.values.push_back(std::move(value));
        }
    } while (read.last != Reader::Result::malformed && from < bytes.size());
    read.why = std::string(reader.why());
    read.buffered = reader.buffered();
    return read;
}

RespRead read_resp_cut(std::string_view bytes, std::size_t cut, Limits limits = {}) {
    Reader reader(limits);
    RespRead read;
    for (const std::string_view part : {bytes.substr(0, cut), bytes.substr(cut)}) {
        reader.feed(part);
        Value value;
        while ((read.last = reader.next(value)) == Reader::Result::value) {
            read.shown.push_back(show_resp(value));
            read.values.push_back(std::move(value));
        }
        if (read.last == Reader::Result::malformed) break;
    }
    read.why = std::string(reader.why());
    read.buffered = reader.buffered();
    return read;
}

using Shown = std::vector<std::string>;

// Every type, nesting, binary bulk strings, nulls, a pub/sub push and an XRANGE-like reply.
const std::string kRespStream = std::string("+OK\r\n-ERR unknown command 'FOO'\r\n:42\r\n:-7\r\n$5\r\nhello\r\n") +
                                "$0\r\n\r\n$6\r\na\r\nb\0c\r\n$-1\r\n*-1\r\n*0\r\n"s +
                                "*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$7\r\npayload\r\n"
                                "*2\r\n*2\r\n$15\r\n1700000000000-0\r\n*4\r\n$1\r\no\r\n$1\r\n1\r\n$1\r\nd\r\n$5\r\nhello\r\n"
                                "*2\r\n$15\r\n1700000000001-0\r\n*2\r\n$1\r\no\r\n$1\r\n2\r\n"
                                "*3\r\n:1\r\n*2\r\n+a\r\n*1\r\n$-1\r\n-E\r\n";

const Shown kRespStreamShown = {
    "+OK",
    "-ERR unknown command 'FOO'",
    ":42",
    ":-7",
    "\"hello\"",
    "\"\"",
    "\"a\\r\\nb\\0c\"",
    "nil",
    "nil",
    "[]",
    "[\"message\" \"chan\" \"payload\"]",
    "[[\"1700000000000-0\" [\"o\" \"1\" \"d\" \"hello\"]] [\"1700000000001-0\" [\"o\" \"2\"]]]",
    "[:1 [+a [nil]] -E]",
};

TEST(RespReader, ReadsEveryType) {
    const RespRead read = read_resp(kRespStream);
    EXPECT_EQ(read.shown, kRespStreamShown);
    EXPECT_EQ(read.last, Reader::Result::need_more);
    EXPECT_EQ(read.why, "");
    EXPECT_EQ(read.buffered, 0u);
    ASSERT_EQ(read.values.size(), kRespStreamShown.size());
    EXPECT_EQ(read.values[0].type, Type::simple);
    EXPECT_TRUE(read.values[1].is_error());
    EXPECT_EQ(read.values[1].text, "ERR unknown command 'FOO'");
    EXPECT_EQ(read.values[2].type, Type::integer);
    EXPECT_EQ(read.values[2].integer, 42);
    EXPECT_EQ(read.values[4].type, Type::bulk);
    EXPECT_TRUE(read.values[7].is_null());
    EXPECT_TRUE(read.values[8].is_null());  // *-1 is a null, not an array
    EXPECT_EQ(read.values[9].type, Type::array);
    EXPECT_TRUE(read.values[9].items.empty());
}

TEST(RespReader, ReadsIntegersToTheEndsOfTheirRange) {
    const RespRead read = read_resp(":9223372036854775807\r\n:-9223372036854775808\r\n:0\r\n:-10\r\n");
    ASSERT_EQ(read.values.size(), 4u);
    EXPECT_EQ(read.values[0].integer, std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(read.values[1].integer, std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(read.values[2].integer, 0);
    EXPECT_EQ(read.values[3].integer, -10);
}

TEST(RespReader, KeepsBinaryBulkStringsWhole) {
    const std::string payload = "\r\n\0\xff$3\r\n*1\r\n\0"s;
    const RespRead read = read_resp("$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n");
    ASSERT_EQ(read.values.size(), 1u);
    EXPECT_EQ(read.values[0].type, Type::bulk);
    EXPECT_EQ(read.values[0].text, payload);
}

TEST(RespReader, ReadsAPubSubMessage) {
    const RespRead read = read_resp("*3\r\n$7\r\nmessage\r\n$11\r\nnews.sports\r\n$10\r\n{\"goal\":1}\r\n");
    ASSERT_EQ(read.values.size(), 1u);
    const Value& push = read.values[0];
    ASSERT_EQ(push.type, Type::array);
    ASSERT_EQ(push.items.size(), 3u);
    for (const Value& item : push.items) EXPECT_EQ(item.type, Type::bulk);
    EXPECT_EQ(push.items[0].text, "message");
    EXPECT_EQ(push.items[1].text, "news.sports");
    EXPECT_EQ(push.items[2].text, "{\"goal\":1}");
}

TEST(RespReader, ReadsNestedArraysToTheDepthLimit) {
    std::string nested;
    for (int i = 0; i < 8; ++i) nested += "*1\r\n";
    nested += ":5\r\n";
    const RespRead read = read_resp(nested);
    EXPECT_EQ(read.shown, Shown{"[[[[[[[[:5]]]]]]]]"});
    const RespRead deeper = read_resp("*1\r\n" + nested);
    EXPECT_EQ(deeper.last, Reader::Result::malformed);
    EXPECT_EQ(deeper.why, "arrays nested deeper than the limit");
    EXPECT_EQ(read_resp("*1\r\n*1\r\n*0\r\n", {.max_depth = 2}).last, Reader::Result::malformed);  // empty ones too
    EXPECT_EQ(read_resp("*1\r\n*0\r\n", {.max_depth = 2}).shown, Shown{"[[]]"});
    EXPECT_EQ(read_resp("*0\r\n", {.max_depth = 0}).last, Reader::Result::malformed);
    EXPECT_EQ(read_resp("$1\r\nx\r\n", {.max_depth = 0}).shown, Shown{"\"x\""});
}

TEST(RespReader, GivesTheSameValuesHoweverTheBytesAreCut) {
    for (std::size_t cut = 0; cut <= kRespStream.size(); ++cut) {
        const RespRead read = read_resp_cut(kRespStream, cut);
        ASSERT_EQ(read.shown, kRespStreamShown) << "cut at " << cut;
        ASSERT_EQ(read.last, Reader::Result::need_more) << "cut at " << cut;
    }
    for (const std::size_t piece : {1, 2, 3, 7, 64}) EXPECT_EQ(read_resp(kRespStream, {}, piece).shown, kRespStreamShown);
}

TEST(RespReader, SaysNeedMoreUntilAValueIsWholeAndCountsWhatWaits) {
    Reader reader;
    Value value;
    reader.feed("*2\r\n$5\r\nhel");
    EXPECT_EQ(reader.next(value), Reader::Result::need_more);
    EXPECT_EQ(reader.buffered(), 3u);  // the array's and the bulk's length lines are taken
    reader.feed("lo\r");
    EXPECT_EQ(reader.next(value), Reader::Result::need_more);
    reader.feed("\n:1");
    EXPECT_EQ(reader.next(value), Reader::Result::need_more);
    reader.feed("\r\n+next\r\n+par");
    ASSERT_EQ(reader.next(value), Reader::Result::value);
    EXPECT_EQ(show_resp(value), "[\"hello\" :1]");
    ASSERT_EQ(reader.next(value), Reader::Result::value);
    EXPECT_EQ(show_resp(value), "+next");
    EXPECT_EQ(reader.next(value), Reader::Result::need_more);
    EXPECT_EQ(reader.buffered(), 4u);
    EXPECT_EQ(reader.why(), "");
}

TEST(RespReader, ReadsALargeBulkStringFedInSmallPieces) {
    const std::string payload(16 * 1024 * 1024, 'p');
    const std::string bytes = "$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n:1\r\n";
    Reader reader;
    Value value;
    std::size_t values = 0;
    for (std::size_t from = 0; from < bytes.size(); from += 4096) {
        reader.feed(std::string_view(bytes).substr(from, 4096));
        while (reader.next(value) == Reader::Result::value) {
            ++values;
            if (values == 1) {
                EXPECT_TRUE(value.type == Type::bulk && value.text == payload);
            }
        }
    }
    EXPECT_EQ(values, 2u);
    EXPECT_EQ(value.integer, 1);
    EXPECT_EQ(reader.buffered(), 0u);
}

TEST(RespReader, DoesNotReserveWhatALengthOnlyAnnounces) {
    // glibc's count of bytes in mmap'd blocks: an allocation of tens of MB would be one (an ASan
    // build has its own allocator, and this count stays 0 there).
    const std::size_t before = mallinfo2().hblkhd;
    Reader bulk_reader;
    bulk_reader.feed("$60000000\r\n0123456789");
    Reader array_reader;
    array_reader.feed("*1000000\r\n:1\r\n:2\r\n");
    Value value;
    EXPECT_EQ(bulk_reader.next(value), Reader::Result::need_more);
    EXPECT_EQ(array_reader.next(value), Reader::Result::need_more);
    EXPECT_LT(mallinfo2().hblkhd, before + 1024 * 1024);
}

// --- malformed streams --------------------------------------------------------

struct RespBad {
    std::string bytes;
    std::string why;
};

std::string show_resp_bytes(const std::string& bytes) {
    Value as_bulk;
    as_bulk.type = Type::bulk;
    as_bulk.text = bytes;
    return show_resp(as_bulk);
}

void expect_malformed(const std::vector<RespBad>& cases, Limits limits = {}) {
    for (const RespBad& bad : cases) {
        for (const std::size_t piece : {std::string_view::npos, std::size_t(1)}) {
            const RespRead read = read_resp(bad.bytes, limits, piece);
            EXPECT_EQ(read.last, Reader::Result::malformed) << show_resp_bytes(bad.bytes);
            EXPECT_EQ(read.why, bad.why) << show_resp_bytes(bad.bytes);
        }
    }
}

TEST(RespReader, RejectsAnUnknownTypeByte) {
    expect_malformed({{"?OK\r\n", "unknown type byte"},
                      {"_\r\n", "unknown type byte"},     // RESP3's null
                      {"%1\r\n", "unknown type byte"},    // RESP3's map
                      {"\r\n", "unknown type byte"},
                      {"+OK\r\nx", "unknown type byte"},  // after a good value
                      {"*1\r\n#t\r\n", "unknown type byte"}});
}

TEST(RespReader, RejectsLinesNotEndedByCrLf) {
    expect_malformed({{"+OK\n", "line feed without carriage return"},
                      {"+OK\rx\r\n", "carriage return not followed by line feed"},
                      {"+OK\r\r\n", "carriage return not followed by line feed"},
                      {":12\n", "line feed without carriage return"},
                      {"$3\n", "line feed without carriage return"},
                      {"*1\r:1\r\n", "carriage return not followed by line feed"}});
}

TEST(RespReader, RejectsIntegersThatAreNotNumbersOrOverflow) {
    const std::string why = "integer not a number or out of range";
    expect_malformed({{":\r\n", why},
                      {":-\r\n", why},
                      {":+5\r\n", why},
                      {": 5\r\n", why},
                      {":5 \r\n", why},
                      {":1.5\r\n", why},
                      {":0x10\r\n", why},
                      {":-0\r\n", why},  // numbers as Redis writes them, and nothing else
                      {":007\r\n", why},
                      {":00\r\n", why},
                      {":9223372036854775808\r\n", why},
                      {":-9223372036854775809\r\n", why}});
}

TEST(RespReader, RejectsLengthsThatAreNotNumbersOrOverflow) {
    const std::string why = "length not -1 or a decimal number in range";
    expect_malformed({{"$\r\n", why},
                      {"$+5\r\n", why},
                      {"$-0\r\n", why},
                      {"*-0\r\n", why},
                      {"$ 1\r\n", why},
                      {"$1x\r\n", why},
                      {"$-\r\n", why},
                      {"$05\r\n", why},
                      {"*00\r\n", why},
                      {"*abc\r\n", why},
                      {"$99999999999999999999\r\n", why},
                      {"*9223372036854775808\r\n", why}});
}

TEST(RespReader, RejectsLengthsBelowMinusOne) {
    expect_malformed({{"$-2\r\n", "length below -1"}, {"*-5\r\n", "length below -1"}});
}

TEST(RespReader, RejectsABulkStringNotFollowedByCrLf) {
    expect_malformed({{"$3\r\nabcd\r\n", "bulk string not followed by CRLF"},
                      {"$3\r\nabc\n\r", "bulk string not followed by CRLF"},
                      {"$0\r\nxx", "bulk string not followed by CRLF"},
                      {"*1\r\n$1\r\nab\r\n", "bulk string not followed by CRLF"}});
}

TEST(RespReader, RejectsABulkStringPastTheLimit) {
    const Limits limits{.max_bulk = 16};
    EXPECT_EQ(read_resp("$16\r\n0123456789abcdef\r\n", limits).shown, Shown{"\"0123456789abcdef\""});
    expect_malformed({{"$17\r\n", "bulk string longer than the limit"},
                      {"$9223372036854775807\r\n", "bulk string longer than the limit"}},
                     limits);
}

TEST(RespReader, RejectsArraysPastTheirLimits) {
    const Limits limits{.max_items = 3, .max_total_items = 5};
    EXPECT_EQ(read_resp("*3\r\n:1\r\n*2\r\n:2\r\n:3\r\n:4\r\n", limits).shown, Shown{"[:1 [:2 :3] :4]"});
    // The count starts again with each reply.
    EXPECT_EQ(read_resp("*3\r\n:1\r\n:2\r\n:3\r\n*3\r\n:1\r\n:2\r\n:3\r\n", limits).shown.size(), 2u);
    expect_malformed({{"*4\r\n", "array longer than the limit"},
                      {"*3\r\n*3\r\n", "reply with more elements than the limit"},
                      {"*2\r\n*2\r\n:1\r\n:2\r\n*2\r\n", "reply with more elements than the limit"}},
                     limits);
}

TEST(RespReader, RejectsALongLineWithoutWaitingForItsEnd) {
    const Limits limits{.max_line = 8};
    EXPECT_EQ(read_resp("+12345678\r\n", limits).shown, Shown{"+12345678"});
    expect_malformed({{"+123456789", "line longer than the limit"},  // no CRLF yet: not waited for
                      {"-123456789\r\n", "line longer than the limit"},
                      {":1234567890", "line longer than the limit"},
                      {"$000000001\r\n", "line longer than the limit"}},
                     limits);
    Reader reader(limits);
    Value value;
    reader.feed("+12345678");
    EXPECT_EQ(reader.next(value), Reader::Result::need_more);  // at the limit, the CR may still come
}

TEST(RespReader, StaysMalformed) {
    Reader reader;
    Value value;
    reader.feed("+OK\r\n!\r\n+later\r\n");
    ASSERT_EQ(reader.next(value), Reader::Result::value);
    EXPECT_EQ(reader.next(value), Reader::Result::malformed);
    reader.feed("+more\r\n");
    EXPECT_EQ(reader.next(value), Reader::Result::malformed);
    EXPECT_EQ(reader.next(value), Reader::Result::malformed);
    EXPECT_EQ(reader.why(), "unknown type byte");
    EXPECT_EQ(show_resp(value), "+OK");  // untouched by the failures
}

// --- commands -----------------------------------------------------------------

TEST(RespCommand, WritesAnArrayOfBulkStrings) {
    std::string out = "kept";
    append_command(out, {"XADD", "topic:news", "*", "d", "hello"});
    EXPECT_EQ(out, "kept*5\r\n$4\r\nXADD\r\n$10\r\ntopic:news\r\n$1\r\n*\r\n$1\r\nd\r\n$5\r\nhello\r\n");
    out.clear();
    const std::string binary = "a\r\n\0b"s;
    const std::vector<std::string_view> args{"PUBLISH", "", binary};
    append_command(out, args);
    EXPECT_EQ(out, "*3\r\n$7\r\nPUBLISH\r\n$0\r\n\r\n$5\r\na\r\n\0b\r\n"s);
    out.clear();
    append_command(out, std::initializer_list<std::string_view>{});
    EXPECT_EQ(out, "*0\r\n");
}

TEST(RespCommand, ReadsBackAsBulkStrings) {
    const std::string big(100000, 'z');
    const std::string binary = "\0\r\n\xff"s;
    std::string out;
    append_command(out, {"SUBSCRIBE", "a", "b"});
    append_command(out, {"SET", big, binary, ""});
    const RespRead read = read_resp(out, {}, 1000);
    ASSERT_EQ(read.values.size(), 2u);
    EXPECT_EQ(read.shown[0], "[\"SUBSCRIBE\" \"a\" \"b\"]");
    const Value& set = read.values[1];
    ASSERT_EQ(set.type, Type::array);
    ASSERT_EQ(set.items.size(), 4u);
    for (const Value& item : set.items) EXPECT_EQ(item.type, Type::bulk);
    EXPECT_EQ(set.items[1].text, big);
    EXPECT_EQ(set.items[2].text, binary);
    EXPECT_EQ(set.items[3].text, "");
}

}  // namespace
}  // namespace cspd::resp
