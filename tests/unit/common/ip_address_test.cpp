#include "common/ip_address.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(IpAddress, ParsesBothFamiliesAndKeepsIPv4As16Bytes) {
    const auto v4 = IpAddress::parse("192.0.2.1");
    ASSERT_TRUE(v4);
    EXPECT_TRUE(v4->is_v4());
    EXPECT_EQ(v4->text(), "192.0.2.1");
    EXPECT_EQ(*v4, *IpAddress::parse("::ffff:192.0.2.1"));  // the same address, however written
    const auto v6 = IpAddress::parse("2001:db8::1");
    ASSERT_TRUE(v6);
    EXPECT_FALSE(v6->is_v4());
    EXPECT_EQ(v6->text(), "2001:db8::1");
    EXPECT_EQ(*IpAddress::parse("127.0.0.2"), IpAddress::v4(0x7f000002));
}

TEST(IpAddress, WritesTheLongestAddressesInItsRoom) {
    for (const char* text : {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "1111:2222:3333:4444:5555:6666:7777:8888",
                             "::1.2.3.4", "64:ff9b::c000:221", "fe80::1"})
        EXPECT_EQ(IpAddress::parse(text)->text(), IpAddress::parse(text)->text().size() ? std::string(text) : "") << text;
    EXPECT_EQ(IpAddress::parse("::ffff:1.2.3.4")->text(), "1.2.3.4");
    EXPECT_EQ(IpAddress::parse("10.1.2.3")->v4_value(), 0x0a010203u);
    EXPECT_EQ(IpAddress::parse("::1")->v4_value(), 0u);
    for (const char* text : {"01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3", "1.2.3.4.", ".1.2.3.4", "1..2.3", "1.2.3.4a"})
        EXPECT_FALSE(IpAddress::parse(text)) << text;
}

TEST(IpAddress, RefusesWhatIsNotAnAddress) {
    for (const char* text : {"", "192.0.2", "192.0.2.256", "[::1]", "::1%lo", "192.0.2.1:80", "host.example",
                             " 192.0.2.1", "1.2.3.4.5"})
        EXPECT_FALSE(IpAddress::parse(text)) << text;
}

TEST(IpAddress, LimitsKeyIPv4WholeAndIPv6ByItsSlash64) {
    EXPECT_EQ(IpAddress::parse("192.0.2.7")->limit_key(), *IpAddress::parse("192.0.2.7"));
    EXPECT_NE(IpAddress::parse("192.0.2.7")->limit_key(), IpAddress::parse("192.0.2.8")->limit_key());
    EXPECT_EQ(IpAddress::parse("2001:db8:1:2:aaaa::1")->limit_key(), IpAddress::parse("2001:db8:1:2:ffff::9")->limit_key());
    EXPECT_NE(IpAddress::parse("2001:db8:1:2::1")->limit_key(), IpAddress::parse("2001:db8:1:3::1")->limit_key());
    EXPECT_EQ(IpAddress::parse("2001:db8:1:2::1")->limit_key().text(), "2001:db8:1:2::");
}

TEST(AddressRange, MatchesItsPrefixOnly) {
    const auto ten = AddressRange::parse("10.0.0.0/8");
    ASSERT_TRUE(ten);
    EXPECT_TRUE(ten->contains(*IpAddress::parse("10.255.1.2")));
    EXPECT_FALSE(ten->contains(*IpAddress::parse("11.0.0.1")));
    EXPECT_FALSE(ten->contains(*IpAddress::parse("::a00:1")));  // IPv4 ranges hold IPv4 addresses only
    const auto odd = AddressRange::parse("192.168.4.0/22");
    ASSERT_TRUE(odd);
    EXPECT_TRUE(odd->contains(*IpAddress::parse("192.168.7.255")));
    EXPECT_FALSE(odd->contains(*IpAddress::parse("192.168.8.0")));
    const auto host_bits = AddressRange::parse("10.1.2.3/8");  // host bits cleared, as nginx does
    ASSERT_TRUE(host_bits);
    EXPECT_TRUE(host_bits->contains(*IpAddress::parse("10.9.9.9")));
    const auto one = AddressRange::parse("127.0.0.3");
    ASSERT_TRUE(one);
    EXPECT_TRUE(one->contains(*IpAddress::parse("127.0.0.3")));
    EXPECT_FALSE(one->contains(*IpAddress::parse("127.0.0.2")));
    const auto v6 = AddressRange::parse("2001:db8::/32");
    ASSERT_TRUE(v6);
    EXPECT_TRUE(v6->contains(*IpAddress::parse("2001:db8:ffff::1")));
    EXPECT_FALSE(v6->contains(*IpAddress::parse("2001:db9::1")));
    const auto all = AddressRange::parse("0.0.0.0/0");
    ASSERT_TRUE(all);
    EXPECT_TRUE(all->contains(*IpAddress::parse("203.0.113.9")));
    EXPECT_FALSE(all->contains(*IpAddress::parse("2001:db8::1")));
}

TEST(AddressRange, RefusesBadPrefixes) {
    for (const char* text : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "::/129", "/8", "10.0.0.0/8/8"})
        EXPECT_FALSE(AddressRange::parse(text)) << text;
}

TEST(AddressRanges, ParsesAListAndSaysWhichItemIsWrong) {
    std::string error;
    const auto ranges = AddressRanges::parse("127.0.0.1, 10.0.0.0/8,::1", error);
    ASSERT_TRUE(ranges) << error;
    EXPECT_EQ(ranges->size(), 3u);
    EXPECT_TRUE(ranges->contains(*IpAddress::parse("::1")));
    EXPECT_TRUE(ranges->contains(*IpAddress::parse("10.2.3.4")));
    EXPECT_FALSE(ranges->contains(*IpAddress::parse("127.0.0.2")));
    EXPECT_FALSE(AddressRanges::parse("127.0.0.1,nginx", error));
    EXPECT_NE(error.find("'nginx'"), std::string::npos) << error;
}

}  // namespace
}  // namespace cspd
