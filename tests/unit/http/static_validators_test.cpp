// The pieces static files (and handlers' validators) are answered with: HTTP dates, byte ranges,
// and the RFC 9110 precondition order.
#include "http/byte_range.hpp"
#include "http/http_date.hpp"
#include "http/preconditions.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cspd {
namespace {

TEST(HttpDate, FormatsImfFixdateAndReadsAllThreeFormats) {
    char text[32];
    EXPECT_EQ(format_http_date(784111777, text), "Sun, 06 Nov 1994 08:49:37 GMT");
    EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
    EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
    EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), 784111777);
    EXPECT_FALSE(parse_http_date("yesterday"));
    EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT trailing"));
    EXPECT_FALSE(parse_http_date(""));
}

TEST(ByteRange, OneRangeIsServedInsideTheSize) {
    using K = ByteRange::Kind;
    const auto r = [](std::string_view h, std::uint64_t size) { return parse_byte_range(h, size); };
    EXPECT_EQ(r("bytes=0-4", 10).kind, K::single);
    EXPECT_EQ(r("bytes=0-4", 10).last, 4u);
    EXPECT_EQ(r("bytes=5-", 10).first, 5u);
    EXPECT_EQ(r("bytes=5-", 10).last, 9u);
    EXPECT_EQ(r("bytes=-3", 10).first, 7u);       // the last three
    EXPECT_EQ(r("bytes=-30", 10).first, 0u);      // more than there is: all of it
    EXPECT_EQ(r("bytes=8-100", 10).last, 9u);     // cut to the end
    EXPECT_EQ(r("bytes=10-", 10).kind, K::unsatisfiable);
    EXPECT_EQ(r("bytes=-0", 10).kind, K::unsatisfiable);
    EXPECT_EQ(r("bytes=0-", 0).kind, K::unsatisfiable);
    // Ignored (the whole representation): other units, malformed, reversed, several ranges.
    for (const char* ignored : {"", "items=0-1", "bytes=", "bytes=a-b", "bytes=5-3", "bytes=0-1,3-4", "bytes=--1"})
        EXPECT_EQ(r(ignored, 10).kind, K::whole) << ignored;
}

struct Request {
    std::vector<HttpHeader> headers;
    HttpRequest request;
    Request(std::string_view method, std::vector<HttpHeader> h) : headers(std::move(h)) {
        request.method = method;
        request.head = method == "HEAD";
        request.headers = headers;
    }
};

TEST(Preconditions, FollowTheRfcOrder) {
    const Validators v{"\"abc\"", 1000};
    const auto eval = [&](std::string_view method, std::vector<HttpHeader> headers) {
        Request r(method, std::move(headers));
        return evaluate_preconditions(r.request, v);
    };
    using P = Precondition;
    char newer[32], older[32], same[32];
    format_http_date(2000, newer);
    format_http_date(500, older);
    format_http_date(1000, same);
    EXPECT_EQ(eval("GET", {}), P::proceed);
    EXPECT_EQ(eval("GET", {{"If-None-Match", "\"abc\""}}), P::not_modified);
    EXPECT_EQ(eval("GET", {{"If-None-Match", "W/\"abc\""}}), P::not_modified);  // weak comparison
    EXPECT_EQ(eval("GET", {{"If-None-Match", "\"x\", \"abc\""}}), P::not_modified);
    EXPECT_EQ(eval("GET", {{"If-None-Match", "*"}}), P::not_modified);
    EXPECT_EQ(eval("GET", {{"If-None-Match", "\"x\""}}), P::proceed);
    EXPECT_EQ(eval("POST", {{"If-None-Match", "\"abc\""}}), P::failed);  // not GET/HEAD: 412
    EXPECT_EQ(eval("HEAD", {{"If-Modified-Since", same}}), P::not_modified);
    EXPECT_EQ(eval("GET", {{"If-Modified-Since", older}}), P::proceed);
    // If-None-Match wins over If-Modified-Since.
    EXPECT_EQ(eval("GET", {{"If-None-Match", "\"x\""}, {"If-Modified-Since", newer}}), P::proceed);
    EXPECT_EQ(eval("GET", {{"If-Match", "\"abc\""}}), P::proceed);
    EXPECT_EQ(eval("GET", {{"If-Match", "W/\"abc\""}}), P::failed);  // strong comparison
    EXPECT_EQ(eval("PUT", {{"If-Match", "\"x\""}}), P::failed);
    EXPECT_EQ(eval("GET", {{"If-Unmodified-Since", older}}), P::failed);
    EXPECT_EQ(eval("GET", {{"If-Unmodified-Since", newer}}), P::proceed);
    // If-Match wins over If-Unmodified-Since; a bad date is ignored.
    EXPECT_EQ(eval("GET", {{"If-Match", "\"abc\""}, {"If-Unmodified-Since", older}}), P::proceed);
    EXPECT_EQ(eval("GET", {{"If-Unmodified-Since", "not a date"}}), P::proceed);
}

TEST(Preconditions, IfRangeNeedsAStrongMatchOrTheExactDate) {
    const Validators v{"\"abc\"", 1000};
    char same[32], other[32];
    format_http_date(1000, same);
    format_http_date(999, other);
    const auto holds = [&](std::string_view value) {
        Request r("GET", {{"If-Range", value}});
        return if_range_holds(r.request, v);
    };
    EXPECT_TRUE(holds("\"abc\""));
    EXPECT_FALSE(holds("W/\"abc\""));
    EXPECT_FALSE(holds("\"x\""));
    EXPECT_TRUE(holds(same));
    EXPECT_FALSE(holds(other));
    Request none("GET", {});
    EXPECT_TRUE(if_range_holds(none.request, v));
}

}  // namespace
}  // namespace cspd
