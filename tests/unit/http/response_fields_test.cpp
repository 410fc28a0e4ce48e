// Reading a response head back as HTTP/2 fields: status, lower-case names, connection fields gone.
#include "http/response.hpp"
#include "http/response_fields.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(ResponseFields, ReadsWhatAppendResponseWrites) {
    std::string out;
    ResponseHead head;
    head.status = HttpStatus::ok;
    head.content_type = "text/plain";
    head.extra_headers = "X-Custom: one two\r\nSet-Cookie: a=1\r\n";
    head.date = "Thu, 03 Dec 2026 04:00:00 GMT";
    head.keep_alive = false;  // says Connection: close, which HTTP/2 must not carry
    append_response(out, head, "hello");
    ResponseFields fields;
    ASSERT_TRUE(read_response_head(out, fields));
    EXPECT_EQ(fields.status, 200);
    EXPECT_EQ(out.substr(fields.head_size), "hello");
    std::vector<std::pair<std::string, std::string>> got;
    for (const HttpHeader& h : fields.fields) got.emplace_back(h.name, h.value);
    const std::vector<std::pair<std::string, std::string>> want = {
        {"server", "cspd"},      {"date", "Thu, 03 Dec 2026 04:00:00 GMT"}, {"content-type", "text/plain"},
        {"content-length", "5"}, {"x-custom", "one two"},                    {"set-cookie", "a=1"}};
    EXPECT_EQ(got, want);
}

TEST(ResponseFields, DropsEveryConnectionSpecificField) {
    std::string out =
        "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n"
        "Upgrade: h2c\r\nProxy-Connection: x\r\nVary: \t Accept-Encoding \t\r\n\r\n";
    ResponseFields fields;
    ASSERT_TRUE(read_response_head(out, fields));
    ASSERT_EQ(fields.fields.size(), 1u);
    EXPECT_EQ(fields.fields[0].name, "vary");
    EXPECT_EQ(fields.fields[0].value, "Accept-Encoding");  // RFC 9113 §8.2.1: no whitespace at either end
}

TEST(ResponseFields, RefusesWhatIsNotAWholeHead) {
    ResponseFields fields;
    for (std::string bad : {std::string("HTTP/1.1 200 OK\r\nA: b\r\n"), std::string("HTTP/1.0 200 OK\r\n\r\n"),
                            std::string("HTTP/1.1 2x0 OK\r\n\r\n"), std::string("HTTP/1.1 200 OK\r\nno colon\r\n\r\n"),
                            std::string("HTTP/1.1 099 X\r\n\r\n"), std::string("HTTP/1.1 200 OK\r\n: empty\r\n\r\n")})
        EXPECT_FALSE(read_response_head(bad, fields)) << bad;
}

}  // namespace
}  // namespace cspd
