// HTTP/2's HEADERS made from a typed Response (RFC 9113 §8.3.2, §8.2): the rules alone.
#include "serving/protocols/http2_response_head.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace cspd {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields head_of(const Response& response) {
    Http2ResponseHead head;
    head.build(response, "Thu, 03 Dec 2026 04:00:00 GMT");
    Fields got;
    for (const ResponseField& f : head.fields()) got.emplace_back(f.name, f.value);
    return got;
}

bool has(const Fields& fields, const std::string& name) {
    for (const auto& [n, v] : fields)
        if (n == name) return true;
    return false;
}

std::string value_of(const Fields& fields, const std::string& name) {
    for (const auto& [n, v] : fields)
        if (n == name) return v;
    return "(absent)";
}

TEST(Http2ResponseHead, StatusFirstThenTheHostsFieldsThenTheAnswersLowered) {
    const ResponseField set[] = {{"X-Custom", "one two"}, {"Set-Cookie", "a=1"}};
    Response r;
    r.content_type = "text/plain";
    r.fields = set;
    r.body = "hello";
    r.request_id = "id-1";
    const Fields want = {{":status", "200"},       {"server", "cspd"},       {"date", "Thu, 03 Dec 2026 04:00:00 GMT"},
                         {"x-request-id", "id-1"}, {"content-type", "text/plain"}, {"content-length", "5"},
                         {"x-custom", "one two"},  {"set-cookie", "a=1"}};
    EXPECT_EQ(head_of(r), want);
}

TEST(Http2ResponseHead, LeavesOutEveryFieldOfAnHttp1Connection) {
    const ResponseField set[] = {{"Connection", "close"},    {"Keep-Alive", "timeout=5"}, {"Transfer-Encoding", "chunked"},
                                 {"Upgrade", "websocket"},   {"Proxy-Connection", "x"},   {"X-Kept", "1"}};
    Response r;
    r.fields = set;
    const Fields got = head_of(r);
    for (const char* name : {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"})
        EXPECT_FALSE(has(got, name)) << name;
    EXPECT_TRUE(has(got, "x-kept"));
}

TEST(Http2ResponseHead, SaysTheLengthOfBytesAndFilesButNotOfAStreamOrANoContentStatus) {
    Response file;
    file.body_kind = BodyKind::file;
    file.file_size = 1 << 20;
    EXPECT_EQ(value_of(head_of(file), "content-length"), "1048576");
    Response stream;
    stream.content_type = "text/event-stream";
    stream.body_kind = BodyKind::stream;
    EXPECT_FALSE(has(head_of(stream), "content-length"));
    EXPECT_TRUE(has(head_of(stream), "content-type"));
    Response not_modified;
    not_modified.status = HttpStatus::not_modified;
    not_modified.content_type = "text/html";
    not_modified.body = "ignored";
    const Fields got = head_of(not_modified);
    EXPECT_EQ(got[0].second, "304");
    EXPECT_FALSE(has(got, "content-length"));
    EXPECT_FALSE(has(got, "content-type"));
}

TEST(Http2ResponseHead, TrimsWhitespaceAtTheEndsOfAValue) {
    const ResponseField set[] = {{"X-Padded", " \tvalue\t "}};
    Response r;
    r.fields = set;
    EXPECT_EQ(head_of(r).back(), (std::pair<std::string, std::string>{"x-padded", "value"}));
}

TEST(Http2ResponseHead, ItsViewsHoldAcrossAManyFieldedAnswerAndAreRemadeForTheNext) {
    std::vector<std::string> names;
    for (int i = 0; i < 100; ++i) names.push_back("X-Field-" + std::to_string(i));
    std::vector<ResponseField> set;
    for (const std::string& name : names) set.push_back({name, name});
    Response many;
    many.fields = set;
    Http2ResponseHead head;
    head.build(many, "D");
    ASSERT_EQ(head.fields().size(), 4u + names.size());  // :status, server, date, content-length, then these
    for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(head.fields()[4 + i].value, names[i]);
    head.build(Response{}, "D");
    EXPECT_EQ(head.fields().size(), 4u);
    EXPECT_GT(head.bytes(), 0u);
}

}  // namespace
}  // namespace cspd
