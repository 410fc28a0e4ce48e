// A response's fields kept in one buffer: their views survive the buffer's growth, copies and moves.
#include "http/response_fields.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace cspd {
namespace {

void expect_fields(const ResponseFields& fields, int count) {
    ASSERT_EQ(fields.size(), static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        EXPECT_EQ(fields.list()[i].name, "X-Field-" + std::to_string(i));
        EXPECT_EQ(fields.list()[i].value, "value " + std::to_string(i));
    }
}

TEST(ResponseFields, KeepsEveryFieldWhileItsBufferGrowsAndMoves) {
    ResponseFields fields;
    for (int i = 0; i < 200; ++i) fields.add("X-Field-" + std::to_string(i), "value " + std::to_string(i));
    expect_fields(fields, 200);
    const ResponseFields copy = fields;
    expect_fields(copy, 200);
    ResponseFields moved = std::move(fields);
    expect_fields(moved, 200);
    EXPECT_TRUE(fields.empty());  // NOLINT: a moved-from set is empty, and usable
}

TEST(ResponseFields, AShortBufferMovedByCopyTakesItsViewsAlong) {
    ResponseFields fields;
    fields.add("A", "1");  // a few bytes: the string moves by copying its inline buffer
    ResponseFields moved(std::move(fields));
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(moved.list()[0].name, "A");
    EXPECT_EQ(moved.list()[0].value, "1");
    ResponseFields assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.find("a"), "1");
}

TEST(ResponseFields, FindsAFieldByNameInAnyCaseAndTellsAbsentFromEmpty) {
    ResponseFields fields;
    fields.add("ETag", "\"v1\"");
    fields.add("X-Empty", "");
    EXPECT_EQ(fields.find("etag"), "\"v1\"");
    EXPECT_TRUE(fields.contains("x-empty"));
    EXPECT_NE(fields.find("X-EMPTY").data(), nullptr);
    EXPECT_FALSE(fields.contains("set-cookie"));
    EXPECT_EQ(fields.find("set-cookie").data(), nullptr);
    fields.clear();
    EXPECT_TRUE(fields.empty());
    EXPECT_FALSE(fields.contains("etag"));
}

}  // namespace
}  // namespace cspd
