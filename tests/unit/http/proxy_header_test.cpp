#include "http/proxy_header.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cspd {
namespace {

using State = ProxyHeader::State;

std::string v2(unsigned char command, unsigned char family, const std::string& body) {
    std::string h("\r\n\r\n\0\r\nQUIT\n", 12);
    h.push_back(char(0x20 | command));
    h.push_back(char(family));
    h.push_back(char(body.size() >> 8));
    h.push_back(char(body.size() & 0xff));
    return h + body;
}

TEST(ProxyHeader, ReadsVersion1Lines) {
    const std::string line = "PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\n";
    const ProxyHeader h = parse_proxy_header(line + "GET / HTTP/1.1\r\n");
    ASSERT_EQ(h.state, State::whole);
    EXPECT_EQ(h.length, line.size());
    ASSERT_TRUE(h.source);
    EXPECT_EQ(h.source->text(), "203.0.113.7");
    EXPECT_EQ(h.source_port, 56324);
    const ProxyHeader six = parse_proxy_header("PROXY TCP6 2001:db8::7 2001:db8::1 4000 80\r\n");
    ASSERT_EQ(six.state, State::whole);
    EXPECT_EQ(six.source->text(), "2001:db8::7");
    const ProxyHeader unknown = parse_proxy_header("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\nGET");
    ASSERT_EQ(unknown.state, State::whole);
    EXPECT_FALSE(unknown.source);  // the peer stands
    EXPECT_EQ(unknown.length, 35u);
}

TEST(ProxyHeader, EveryPrefixOfAHeaderIsIncomplete) {
    for (const std::string& whole : {std::string("PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\n"),
                                    v2(1, 0x11, std::string("\xcb\x00\x71\x07\xc0\x00\x02\x01\xdc\x04\x01\xbb", 12))}) {
        for (std::size_t n = 0; n < whole.size(); ++n)
            EXPECT_EQ(parse_proxy_header(whole.substr(0, n)).state, State::incomplete) << n;
        EXPECT_EQ(parse_proxy_header(whole).state, State::whole);
    }
}

TEST(ProxyHeader, RefusesWhatIsNotAHeader) {
    for (const std::string& bad : {
             std::string("GET / HTTP/1.1\r\n"),
             std::string("\x16\x03\x01", 3),                         // a TLS ClientHello
             std::string("PROXY TCP4 203.0.113.7 192.0.2.1 56324\r\n"),  // four fields
             std::string("PROXY TCP4 2001:db8::7 192.0.2.1 1 2\r\n"),    // an IPv6 address on a TCP4 line
             std::string("PROXY TCP6 203.0.113.7 2001:db8::1 1 2\r\n"),  // and the other way round
             std::string("PROXY TCP4 203.0.113.7 192.0.2.1 65536 2\r\n"),
             std::string("PROXY TCP4 203.0.113.7 192.0.2.1 01 2\r\n"),
             std::string("PROXY TCP4 203.0.113.7  192.0.2.1 1 2\r\n"),
             std::string("PROXY UDP4 203.0.113.7 192.0.2.1 1 2\r\n"),
             "PROXY TCP4 " + std::string(100, '1'),                   // no CR LF within 107 bytes
             v2(2, 0x11, std::string(12, '\0')),                      // an unknown command
             v2(1, 0x11, std::string(4, '\0')),                       // too short for IPv4
             v2(1, 0x21, std::string(20, '\0')),                      // too short for IPv6
             v2(1, 0x51, std::string(12, '\0')),                      // an unknown family
         })
        EXPECT_EQ(parse_proxy_header(bad).state, State::bad) << bad;
    std::string version3 = v2(1, 0x11, std::string(12, '\0'));
    version3[12] = char(0x31);
    EXPECT_EQ(parse_proxy_header(version3).state, State::bad);
    std::string huge = v2(1, 0x11, "");
    huge[14] = char(0x10);  // 4 KiB of addresses and TLVs: more than this server takes
    EXPECT_EQ(parse_proxy_header(huge).state, State::bad);
}

TEST(ProxyHeader, ReadsVersion2WithItsTlvs) {
    std::string ipv6(36, '\0');
    ipv6[0] = char(0x20), ipv6[1] = char(0x01), ipv6[2] = char(0x0d), ipv6[3] = char(0xb8), ipv6[15] = 7;
    ipv6[32] = char(0x1f), ipv6[33] = char(0x90);  // source port 8080
    const std::string tlv = std::string("\x04\x00\x03" "abc", 6);  // PP2_TYPE_NOOP, skipped
    const ProxyHeader h = parse_proxy_header(v2(1, 0x21, ipv6 + tlv) + "rest");
    ASSERT_EQ(h.state, State::whole);
    EXPECT_EQ(h.length, 16u + 36 + 6);
    EXPECT_EQ(h.source->text(), "2001:db8::7");
    EXPECT_EQ(h.source_port, 8080);
    const ProxyHeader local = parse_proxy_header(v2(0, 0x00, ""));  // a balancer's own health check
    ASSERT_EQ(local.state, State::whole);
    EXPECT_FALSE(local.source);
    const ProxyHeader unspec = parse_proxy_header(v2(1, 0x00, std::string(5, 'x')));
    ASSERT_EQ(unspec.state, State::whole);
    EXPECT_FALSE(unspec.source);
}

}  // namespace
}  // namespace cspd
