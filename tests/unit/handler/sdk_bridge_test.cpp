#include "handler/sdk_bridge.hpp"

#include <csp/csp.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cspd {
namespace {

TEST(HandlerReply, AppendsTextAndBinaryBytes) {
    HandlerReply reply;
    csp_reply* r = reply.raw();
    EXPECT_EQ(csp_reply_puts(r, "ab"), 0);
    const char binary[] = {'\0', '\xff', '\0'};
    EXPECT_EQ(csp_reply_append(r, binary, sizeof binary), 0);
    EXPECT_EQ(reply.body(), std::string("ab\0\xff\0", 5));
}

TEST(HandlerReply, GrowsPastItsInitialCapacity) {
    HandlerReply reply;
    std::string expected;
    for (int i = 0; i < 100000; ++i) {
        char c = static_cast<char>('a' + i % 26);
        csp_reply_append(reply.raw(), &c, 1);
        expected.push_back(c);
    }
    EXPECT_EQ(reply.body(), expected);
}

TEST(HandlerReply, PrintfFormatsAndGrows) {
    HandlerReply reply;
    csp_reply_printf(reply.raw(), "%d-%s", 42, "x");
    std::string long_text(10000, 'z');
    csp_reply_printf(reply.raw(), "[%s]", long_text.c_str());
    EXPECT_EQ(reply.body(), "42-x[" + long_text + "]");
}

TEST(HandlerReply, ResetEmptiesEverything) {
    HandlerReply reply;
    csp_reply_puts(reply.raw(), "old");
    csp_reply_set_content_type(reply.raw(), "image/png");
    csp_reply_add_header(reply.raw(), "X-A", "1");
    reply.reset();
    EXPECT_TRUE(reply.body().empty());
    EXPECT_EQ(reply.content_type(), "text/html; charset=utf-8");
    EXPECT_TRUE(reply.fields().empty());
}

TEST(HandlerReply, ValidatesContentTypeAndHeaders) {
    HandlerReply reply;
    csp_reply* r = reply.raw();
    EXPECT_EQ(csp_reply_set_content_type(r, "image/png"), 0);
    EXPECT_EQ(reply.content_type(), "image/png");
    EXPECT_EQ(csp_reply_set_content_type(r, "text/html\r\nX-Evil: 1"), -1);
    EXPECT_EQ(reply.content_type(), "image/png");

    EXPECT_EQ(csp_reply_add_header(r, "Set-Cookie", "a=b; Path=/"), 0);
    EXPECT_EQ(csp_reply_add_header(r, "X-Split", "a\r\nInjected: yes"), -1);
    EXPECT_EQ(csp_reply_add_header(r, "Bad Name", "v"), -1);
    EXPECT_EQ(csp_reply_add_header(r, "Content-Length", "0"), -1);
    EXPECT_EQ(csp_reply_add_header(r, "connection", "close"), -1);
    ASSERT_EQ(reply.fields().size(), 1u);
    EXPECT_EQ(reply.fields().list()[0].name, "Set-Cookie");
    EXPECT_EQ(reply.fields().list()[0].value, "a=b; Path=/");
}

struct BoundView {
    std::vector<HttpHeader> headers{{"Host", "h"}, {"X-Test", "one"}, {"x-test", "two"}, {"X-Empty", ""}};
    HttpRequest request;
    HandlerRequestView view;
    BoundView(std::string_view query) {
        request.method = "POST";
        request.target = "/csp/echo";
        request.headers = headers;
        request.body = "payload";
        view.bind(request, {"/csp/echo", "/more", query, "127.0.0.1", 5555, nullptr, nullptr, {}});
    }
};

TEST(HandlerRequestView, ExposesTheRequest) {
    BoundView b("a=1");
    const csp_request* r = b.view.raw();
    EXPECT_EQ(csp::view(r->method), "POST");
    EXPECT_EQ(csp::view(r->path), "/csp/echo");
    EXPECT_EQ(csp::view(r->query), "a=1");
    EXPECT_EQ(csp::view(r->body), "payload");
    EXPECT_EQ(csp::view(r->client_addr), "127.0.0.1");
    EXPECT_EQ(r->client_port, 5555);
    EXPECT_EQ(csp::view(r->path_info), "/more");
    EXPECT_EQ(r->size, sizeof(csp_request));
    EXPECT_EQ(r->api->size, sizeof(csp_host_api));
}

TEST(HandlerRequestView, FillsAbi1sLayoutForAnAbi1Handler) {
    std::vector<HttpHeader> headers{{"X-Test", "one"}};
    HttpRequest request;
    request.method = "GET";
    request.headers = headers;
    HandlerRequestView view;
    view.bind(request, {"/csp/old", "", "q=v", "::1", 7, nullptr, nullptr, {}}, HandlerAbi::v1);
    const abi1::request* r = view.raw_v1();
    EXPECT_EQ(csp::view(r->method), "GET");
    EXPECT_EQ(csp::view(r->path), "/csp/old");
    EXPECT_EQ(csp::view(r->client_addr), "::1");
    EXPECT_EQ(r->client_port, 7);
    EXPECT_EQ(csp::view(r->api->request_query_arg(r, "q", 1)), "v");
    EXPECT_EQ(csp::view(r->api->request_header(r, "x-test", 6)), "one");
}

TEST(HandlerReply, DeferringOutsideAHostThatOffersItGivesNull) {
    HandlerReply reply;
    EXPECT_EQ(csp_reply_defer(reply.raw()), nullptr);
}

TEST(HandlerRequestView, LooksUpHeadersCaseInsensitively) {
    BoundView b("");
    csp::request r(b.view.raw());
    EXPECT_EQ(r.header("x-TEST"), "one");
    EXPECT_EQ(r.header("X-Empty"), "");
    EXPECT_FALSE(r.header("X-Missing").has_value());
}

TEST(HandlerRequestView, DecodesQueryArguments) {
    BoundView b("name=Eva+Maria&x=%41%42&empty=&flag&name=second&bad=%zz");
    csp::request r(b.view.raw());
    EXPECT_EQ(r.query_arg("name"), "Eva Maria");
    EXPECT_EQ(r.query_arg("x"), "AB");
    EXPECT_EQ(r.query_arg("empty"), "");
    EXPECT_EQ(r.query_arg("flag"), "");
    EXPECT_FALSE(r.query_arg("missing").has_value());
    EXPECT_FALSE(r.query_arg("bad").has_value());
    // Earlier results stay valid while later ones are decoded.
    auto first = r.query_arg("x");
    auto second = r.query_arg("name");
    EXPECT_EQ(*first, "AB");
    EXPECT_EQ(*second, "Eva Maria");
}

}  // namespace
}  // namespace cspd
