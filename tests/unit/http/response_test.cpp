#include "http/response.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

ResponseHead head_for(int status) {
    ResponseHead h;
    h.status = HttpStatus(status);
    h.content_type = "text/html";
    h.date = "Mon, 30 Nov 2026 12:00:00 GMT";
    return h;
}

TEST(HttpResponse, SerializesStatusHeadersAndBody) {
    std::string out;
    append_response(out, head_for(200), "<h1>HELLO WORLD</h1>");
    EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nServer: cspd\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\n"
                   "Content-Type: text/html\r\nContent-Length: 20\r\n\r\n<h1>HELLO WORLD</h1>");
}

TEST(HttpResponse, HeadKeepsTheLengthAndDropsTheBody) {
    std::string out;
    ResponseHead h = head_for(200);
    h.head_only = true;
    append_response(out, h, "12345");
    EXPECT_NE(out.find("Content-Length: 5\r\n"), std::string::npos);
    EXPECT_TRUE(out.ends_with("\r\n\r\n"));
}

TEST(HttpResponse, SaysCloseOrKeepAliveAsNeeded) {
    std::string closing, old_client;
    ResponseHead h = head_for(200);
    h.keep_alive = false;
    append_response(closing, h, "");
    EXPECT_NE(closing.find("Connection: close\r\n"), std::string::npos);
    h.keep_alive = true;
    h.http10 = true;
    append_response(old_client, h, "");
    EXPECT_NE(old_client.find("Connection: keep-alive\r\n"), std::string::npos);
}

TEST(HttpResponse, NoContentHasNoBodyOrLength) {
    std::string out;
    append_response(out, head_for(204), "ignored");
    EXPECT_EQ(out.find("Content-Length"), std::string::npos);
    EXPECT_TRUE(out.ends_with("\r\n\r\n"));
}

TEST(HttpResponse, CarriesExtraHeaders) {
    std::string out;
    ResponseHead h = head_for(302);
    h.extra_headers = "Location: /x\r\n";
    append_response(out, h, "");
    EXPECT_NE(out.find("HTTP/1.1 302 Found\r\n"), std::string::npos);
    EXPECT_NE(out.find("\r\nLocation: /x\r\n\r\n"), std::string::npos);
}

TEST(HttpResponse, ErrorsAreShortPlainText) {
    std::string out;
    append_error(out, HttpStatus::not_found, "D", true, false);
    EXPECT_EQ(out, "HTTP/1.1 404 Not Found\r\nServer: cspd\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n"
                   "Content-Length: 14\r\n\r\n404 Not Found\n");
}

}  // namespace
}  // namespace cspd
