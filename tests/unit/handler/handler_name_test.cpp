#include "handler/handler_name.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cspd {
namespace {

TEST(HandlerName, AllowsOnlyLettersDigitsDashAndUnderscore) {
    for (const char* good : {"hello", "x-png", "a_b", "A9"}) EXPECT_TRUE(is_valid_handler_name(good)) << good;
    for (const char* bad : {"", "a.b", "a/b", "..", "a b", "a%", "h\xc3\xa9"})
        EXPECT_FALSE(is_valid_handler_name(bad)) << bad;
    EXPECT_FALSE(is_valid_handler_name(std::string(256, 'a')));
}

TEST(HandlerName, KnowsWhichFilesAreHandlers) {
    EXPECT_EQ(handler_name_of_file("hello.so"), "hello");
    EXPECT_EQ(handler_name_of_file("hello.cpp"), "");
    EXPECT_EQ(handler_name_of_file("hello.cpp", true), "hello");
    EXPECT_EQ(handler_name_of_file("hello.c", true), "hello");
    EXPECT_EQ(handler_name_of_file(".so"), "");
    EXPECT_EQ(handler_name_of_file("a b.so"), "");
    EXPECT_EQ(handler_name_of_file("hello.so.tmp"), "");
}

}  // namespace
}  // namespace cspd
