#include "http/spilled_body.hpp"

#include <gtest/gtest.h>

#include <sys/statvfs.h>

#include <filesystem>
#include <string>

namespace cspd {
namespace {

std::size_t free_bytes(const std::filesystem::path& folder) {
    struct statvfs space {};
    if (::statvfs(folder.c_str(), &space) != 0) return 0;
    return std::size_t(space.f_bavail) * space.f_frsize;
}

TEST(SpilledBody, WritesAndMapsABody) {
    std::string error;
    bool no_room = true;
    auto body = SpilledBody::create(std::filesystem::temp_directory_path(), 10, error, no_room);
    ASSERT_TRUE(body) << error;
    EXPECT_FALSE(no_room);
    EXPECT_EQ(SpilledBody::being_written(), 1u);
    ASSERT_TRUE(body->append("0123456789", error)) << error;
    ASSERT_TRUE(body->finish(error)) << error;
    EXPECT_EQ(SpilledBody::being_written(), 0u);  // finished: no longer counted
    EXPECT_EQ(body->view(), "0123456789");
}

TEST(SpilledBody, NoBodyMayTakeMoreThanItsShareOfTheFreeSpace) {
    const auto folder = std::filesystem::temp_directory_path();
    const std::size_t free = free_bytes(folder);
    ASSERT_GT(free, 0u);
    std::string error;
    bool no_room = false;
    // Alone, a body may take half of what is free: more is refused before a byte is written.
    EXPECT_FALSE(SpilledBody::create(folder, free / 2 + free / 8, error, no_room));
    EXPECT_TRUE(no_room);
    EXPECT_NE(error.find("over its share of the free space"), std::string::npos) << error;
    auto first = SpilledBody::create(folder, 1, error, no_room);
    ASSERT_TRUE(first) << error;
    // With one being written, the next gets a third: a body a little over that is refused.
    EXPECT_FALSE(SpilledBody::create(folder, free / 3 + free / 8, error, no_room));
    EXPECT_TRUE(no_room);
    first.reset();  // dropped unfinished: no longer counted
    EXPECT_EQ(SpilledBody::being_written(), 0u);
}

}  // namespace
}  // namespace cspd
