// HTTP/1.1's wire format for a typed Response: one rule per test, for each version, method and
// kind of body.
#include "http/http1_response.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cspd {
namespace {

constexpr std::string_view kDate = "Mon, 30 Nov 2026 12:00:00 GMT";

Response html(std::string_view body) {
    Response r;
    r.content_type = "text/html";
    r.body = body;
    return r;
}

std::string written(const Response& r, const ResponseFrame& frame = {}) {
    std::string out;
    write_http1(out, r, frame, kDate);
    return out;
}

bool says(const std::string& text, std::string_view line) { return text.find(line) != std::string::npos; }

TEST(Http1Response, WritesStatusLineHostFieldsLengthAndBody) {
    EXPECT_EQ(written(html("<h1>HELLO WORLD</h1>")),
              "HTTP/1.1 200 OK\r\nServer: cspd\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\n"
              "Content-Type: text/html\r\nContent-Length: 20\r\n\r\n<h1>HELLO WORLD</h1>");
}

TEST(Http1Response, HeadKeepsTheLengthAndDropsTheBody) {
    const std::string out = written(html("12345"), {.head_only = true});
    EXPECT_TRUE(says(out, "\r\nContent-Length: 5\r\n"));
    EXPECT_TRUE(out.ends_with("\r\n\r\n"));
}

TEST(Http1Response, Http11SaysCloseOnlyWhenTheConnectionCloses) {
    EXPECT_FALSE(says(written(html("")), "Connection:"));
    EXPECT_TRUE(says(written(html(""), {.keep_alive = false}), "\r\nConnection: close\r\n"));
}

TEST(Http1Response, Http10IsToldKeepAliveExplicitly) {
    EXPECT_TRUE(says(written(html(""), {.http10 = true}), "\r\nConnection: keep-alive\r\n"));
    EXPECT_TRUE(says(written(html(""), {.keep_alive = false, .http10 = true}), "\r\nConnection: close\r\n"));
}

TEST(Http1Response, StatusesWithoutContentHaveNoBodyTypeOrLength) {
    for (int status : {204, 304}) {
        Response r = html("ignored");
        r.status = HttpStatus(status);
        const std::string out = written(r);
        EXPECT_FALSE(says(out, "Content-Length")) << status;
        EXPECT_FALSE(says(out, "Content-Type")) << status;
        EXPECT_TRUE(out.ends_with("\r\n\r\n")) << status;
    }
    Response reset = html("ignored");
    reset.status = HttpStatus{205};  // RFC 9112 §6.3: its empty content must still be delimited
    EXPECT_TRUE(written(reset).ends_with("\r\nContent-Length: 0\r\n\r\n"));
}

TEST(Http1Response, AStreamIsChunkedOnHttp11AndDelimitedByTheCloseOnHttp10) {
    Response r = html("");
    r.body_kind = BodyKind::stream;
    const std::string chunked = written(r);
    EXPECT_TRUE(says(chunked, "\r\nTransfer-Encoding: chunked\r\n"));
    EXPECT_FALSE(says(chunked, "Content-Length"));
    EXPECT_FALSE(says(chunked, "Connection:"));
    EXPECT_TRUE(says(written(r, {.keep_alive = false}), "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"));
    // HTTP/1.0 has no chunks: the body ends with the connection, whatever keep-alive said.
    const std::string old = written(r, {.http10 = true});
    EXPECT_FALSE(says(old, "Transfer-Encoding"));
    EXPECT_TRUE(says(old, "\r\nConnection: close\r\n"));
    // A HEAD's stream says what a GET's would.
    EXPECT_TRUE(says(written(r, {.head_only = true}), "\r\nTransfer-Encoding: chunked\r\n"));
}

TEST(Http1Response, AFileBodySaysItsLengthAndLeavesItsBytesToTheSession) {
    Response r = html("");
    r.body_kind = BodyKind::file;
    r.file_size = 1 << 20;
    EXPECT_TRUE(written(r).ends_with("\r\nContent-Length: 1048576\r\n\r\n"));
}

TEST(Http1Response, FieldsFollowInTheirOrderAndTheRequestIdFollowsDate) {
    const ResponseField fields[] = {{"Location", "/x"}, {"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}};
    Response r = html("");
    r.status = HttpStatus{302};
    r.fields = fields;
    r.request_id = "abc";
    const std::string out = written(r);
    EXPECT_TRUE(out.starts_with("HTTP/1.1 302 Found\r\nServer: cspd\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\n"
                                "X-Request-Id: abc\r\n"));
    EXPECT_TRUE(out.ends_with("\r\nLocation: /x\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"));
}

TEST(Http1Response, SwitchingProtocolsCarriesNoLengthAndKeepsItsFields) {
    const ResponseField fields[] = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"}};
    Response r;
    r.status = HttpStatus::switching_protocols;
    r.fields = fields;
    r.body_kind = BodyKind::stream;
    const std::string out = written(r);
    EXPECT_TRUE(out.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    EXPECT_FALSE(says(out, "Content-Length"));
    EXPECT_FALSE(says(out, "Transfer-Encoding"));
    EXPECT_TRUE(out.ends_with("\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
}

TEST(Http1Response, ErrorsAreShortPlainText) {
    EXPECT_EQ(written(error_response(HttpStatus::not_found)),
              "HTTP/1.1 404 Not Found\r\nServer: cspd\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\n"
              "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n\r\n404 Not Found\n");
}

TEST(Http1Response, TheWriterSinkAppendsWithTheLoopsDate) {
    std::string out = "earlier";
    DateCache date;
    Http1Writer writer(out, date);
    writer.send(html("x"), {});
    EXPECT_TRUE(out.starts_with("earlierHTTP/1.1 200 OK\r\n"));
    EXPECT_TRUE(says(out, "\r\nDate: " + std::string(date.now()) + "\r\n"));
}

}  // namespace
}  // namespace cspd
