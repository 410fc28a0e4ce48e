#include "common/signal_safe_text.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace cspd {
namespace {

TEST(SignalSafeLine, WritesWhatSnprintfWouldForTheCrashLine) {
    SignalSafeLine<256> line;
    line.text("signal ").number(11).text(" at ").pointer(reinterpret_cast<void*>(std::uintptr_t{0x7f00dead}));
    line.text(" #").number(std::uint64_t{42}).text(" fnv ").hex(0xabc, 16).text(" pid ").number(-3);
    EXPECT_EQ(line.view(), "signal 11 at 0x7f00dead #42 fnv 0000000000000abc pid -3");
}

TEST(SignalSafeLine, WritesTheExtremesAndNothing) {
    SignalSafeLine<128> line;
    line.number(std::numeric_limits<std::uint64_t>::max()).text(" ").number(std::numeric_limits<std::int64_t>::min());
    line.text(" ").number(0).text(" ").hex(0).text(" ").pointer(nullptr).text(" ").text(static_cast<const char*>(nullptr));
    EXPECT_EQ(line.view(), "18446744073709551615 -9223372036854775808 0 0 (nil) (null)");
}

TEST(SignalSafeLine, CutsWhatDoesNotFit) {
    SignalSafeLine<8> line;
    line.text("0123456789").number(std::uint64_t{12345});
    EXPECT_EQ(line.view(), "01234567");
}

}  // namespace
}  // namespace cspd
