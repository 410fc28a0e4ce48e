#include "http/forwarded_for.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cspd {
namespace {

struct Forwarding {
    std::vector<HttpHeader> headers;
    HttpRequest view() const {
        HttpRequest request;
        request.headers = headers;
        return request;
    }
};

ProxyTrust trusting(const char* list, ForwardedHeader header) {
    std::string error;
    return {*AddressRanges::parse(list, error), header};
}

std::string client(const Forwarding& r, const char* trusted, ForwardedHeader header = ForwardedHeader::x_forwarded_for) {
    const auto found = forwarded_client(r.view(), trusting(trusted, header));
    return found ? found->text() : "none";
}

std::string by_forwarded(const Forwarding& r, const char* trusted) { return client(r, trusted, ForwardedHeader::forwarded); }

TEST(ForwardedFor, TakesTheRightMostAddressNotTrusted) {
    // The client wrote 9.9.9.9 itself; the first proxy saw it come from 203.0.113.5.
    const Forwarding r{{{"X-Forwarded-For", "9.9.9.9, 203.0.113.5, 10.0.0.2"}}};
    EXPECT_EQ(client(r, "10.0.0.0/8"), "203.0.113.5");
    EXPECT_EQ(client(r, "10.0.0.0/8,203.0.113.0/24"), "9.9.9.9");
    EXPECT_EQ(client(r, "127.0.0.1"), "10.0.0.2");
}

TEST(ForwardedFor, TakesTheLeftMostWhenEveryOneIsTrusted) {
    const Forwarding r{{{"X-Forwarded-For", "10.0.0.7, 10.0.0.2"}}};
    EXPECT_EQ(client(r, "10.0.0.0/8"), "10.0.0.7");
}

TEST(ForwardedFor, ReadsSeveralLinesAsOneListInOrder) {
    const Forwarding r{{{"X-Forwarded-For", "198.51.100.1"}, {"Host", "h"}, {"x-forwarded-for", "10.0.0.2"}}};
    EXPECT_EQ(client(r, "10.0.0.0/8"), "198.51.100.1");
}

TEST(ForwardedFor, StopsAtAnEntryThatIsNotAnAddress) {
    EXPECT_EQ(client({{{"X-Forwarded-For", "198.51.100.1, unknown, 10.0.0.2"}}}, "10.0.0.0/8"), "10.0.0.2");
    EXPECT_EQ(client({{{"X-Forwarded-For", "198.51.100.1, garbage"}}}, "10.0.0.0/8"), "none");
    EXPECT_EQ(client({{{"X-Forwarded-For", ""}}}, "10.0.0.0/8"), "none");
    EXPECT_EQ(client({{{"Host", "h"}}}, "10.0.0.0/8"), "none");
}

TEST(ForwardedFor, SkipsEmptyElementsAndTakesPortsAndBrackets) {
    EXPECT_EQ(client({{{"X-Forwarded-For", "198.51.100.1:5555 ,, 10.0.0.2"}}}, "10.0.0.0/8"), "198.51.100.1");
    EXPECT_EQ(client({{{"X-Forwarded-For", "[2001:db8::5]:443"}}}, "10.0.0.0/8"), "2001:db8::5");
    EXPECT_EQ(client({{{"X-Forwarded-For", "2001:db8::5"}}}, "10.0.0.0/8"), "2001:db8::5");
}

TEST(ForwardedFor, ReadsForwardedForWhenToldTo) {
    const Forwarding r{{{"Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\""}}};
    EXPECT_EQ(by_forwarded(r, "10.0.0.0/8"), "2001:db8:cafe::17");
    EXPECT_EQ(by_forwarded(r, "2001:db8::/32"), "192.0.2.60");
    EXPECT_EQ(by_forwarded({{{"Forwarded", "proto=https;For=\"198.51.100.9:80\""}}}, "10.0.0.0/8"), "198.51.100.9");
    EXPECT_EQ(by_forwarded({{{"Forwarded", "for=_hidden, for=10.0.0.2"}}}, "10.0.0.0/8"), "10.0.0.2");
    EXPECT_EQ(by_forwarded({{{"Forwarded", "for=unknown"}}}, "10.0.0.0/8"), "none");
}

TEST(ForwardedFor, ReadsOneHeaderOnlyNeverTheOtherAsAFallback) {
    // A proxy that writes Forwarded passes a client's own X-Forwarded-For through: never read it.
    const Forwarding both{{{"Forwarded", "for=192.0.2.1"}, {"X-Forwarded-For", "192.0.2.2"}}};
    EXPECT_EQ(by_forwarded(both, "10.0.0.0/8"), "192.0.2.1");
    EXPECT_EQ(client(both, "10.0.0.0/8"), "192.0.2.2");
    EXPECT_EQ(by_forwarded({{{"X-Forwarded-For", "192.0.2.2"}}}, "10.0.0.0/8"), "none");
    EXPECT_EQ(client({{{"Forwarded", "for=192.0.2.1"}}}, "10.0.0.0/8"), "none");
}

TEST(ForwardedFor, NamesAClientOnlyBehindATrustedPeer) {
    const Forwarding r{{{"X-Forwarded-For", "198.51.100.1"}}};
    const ProxyTrust trust = trusting("10.0.0.0/8", ForwardedHeader::x_forwarded_for);
    EXPECT_EQ(trust.client_behind(*IpAddress::parse("10.1.1.1"), r.view())->text(), "198.51.100.1");
    EXPECT_FALSE(trust.client_behind(*IpAddress::parse("192.0.2.1"), r.view()));  // anyone else: ignored
}

TEST(ForwardedFor, ReadsOneEntry) {
    EXPECT_EQ(forwarded_address("\"192.0.2.1\"")->text(), "192.0.2.1");
    EXPECT_FALSE(forwarded_address("[192.0.2.1]"));  // brackets hold IPv6 only
    EXPECT_FALSE(forwarded_address("[2001:db8::1"));
    EXPECT_FALSE(forwarded_address("[2001:db8::1]x"));
    EXPECT_FALSE(forwarded_address("\""));
    EXPECT_FALSE(forwarded_address("2001:db8::1:80:"));
}

}  // namespace
}  // namespace cspd
