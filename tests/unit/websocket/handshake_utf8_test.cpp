#include "websocket/frame_head.hpp"
#include "websocket/handshake.hpp"
#include "websocket/utf8_validator.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cspd::ws {
namespace {

TEST(Handshake, AcceptKeyIsRfc6455sExample) {
    // RFC 6455 section 1.3.
    EXPECT_EQ(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

struct Request {
    std::vector<HttpHeader> headers;
    HttpRequest request;
    explicit Request(std::vector<HttpHeader> h, std::string_view method = "GET") : headers(std::move(h)) {
        request.method = method;
        request.target = "/csp/ws";
        request.headers = headers;
    }
};

std::vector<HttpHeader> good() {
    return {{"Host", "h"},
            {"Upgrade", "websocket"},
            {"Connection", "Upgrade"},
            {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
            {"Sec-WebSocket-Version", "13"}};
}

TEST(Handshake, TellsAValidRequestFromTheWrongOnes) {
    EXPECT_EQ(check_handshake(Request(good()).request), Handshake::valid);
    auto list_forms = good();
    list_forms[1].value = "h2c, WebSocket";
    list_forms[2].value = "keep-alive, upgrade";
    EXPECT_EQ(check_handshake(Request(list_forms).request), Handshake::valid);
    EXPECT_EQ(check_handshake(Request(std::vector<HttpHeader>{{"Host", "h"}}).request), Handshake::not_websocket);
    auto version = good();
    version[4].value = "8";
    EXPECT_EQ(check_handshake(Request(version).request), Handshake::bad_version);
    auto no_version = good();
    no_version.pop_back();
    EXPECT_EQ(check_handshake(Request(no_version).request), Handshake::malformed);
    auto short_key = good();
    short_key[3].value = "dGVzdA==";
    EXPECT_EQ(check_handshake(Request(short_key).request), Handshake::malformed);
    auto no_connection = good();
    no_connection[2].value = "keep-alive";
    EXPECT_EQ(check_handshake(Request(no_connection).request), Handshake::malformed);
    EXPECT_EQ(check_handshake(Request(good(), "POST").request), Handshake::malformed);
    auto two_keys = good();
    two_keys.push_back({"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="});
    EXPECT_EQ(check_handshake(Request(two_keys).request), Handshake::malformed);
}

TEST(Handshake, FindsOfferedSubprotocolsExactly) {
    auto offered = good();
    offered.push_back({"Sec-WebSocket-Protocol", "superchat, chat"});
    const Request r(offered);
    EXPECT_TRUE(offers_protocol(r.request, "chat"));
    EXPECT_TRUE(offers_protocol(r.request, "superchat"));
    EXPECT_FALSE(offers_protocol(r.request, "Chat"));
    EXPECT_FALSE(offers_protocol(r.request, "cha"));
}

TEST(Utf8Validator, AcceptsWellFormedTextAndRefusesTheRest) {
    EXPECT_TRUE(Utf8Validator::valid(""));
    EXPECT_TRUE(Utf8Validator::valid("plain ASCII text, long enough for the fast path"));
    EXPECT_TRUE(Utf8Validator::valid("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"));
    EXPECT_TRUE(Utf8Validator::valid("\xf4\x8f\xbf\xbf"));  // U+10FFFF
    EXPECT_TRUE(Utf8Validator::valid("\xed\x9f\xbf"));      // U+D7FF, before the surrogates
    EXPECT_FALSE(Utf8Validator::valid("\xc0\x80"));          // overlong
    EXPECT_FALSE(Utf8Validator::valid("\xe0\x80\xaf"));      // overlong
    EXPECT_FALSE(Utf8Validator::valid("\xed\xa0\x80"));      // a surrogate
    EXPECT_FALSE(Utf8Validator::valid("\xf4\x90\x80\x80"));  // past U+10FFFF
    EXPECT_FALSE(Utf8Validator::valid("\xf8\x88\x80\x80\x80"));
    EXPECT_FALSE(Utf8Validator::valid("abc\xce"));  // cut short
}

TEST(Utf8Validator, FollowsASequenceAcrossPieces) {
    Utf8Validator v;
    EXPECT_TRUE(v.feed("\xf0\x9f"));
    EXPECT_FALSE(v.complete());
    EXPECT_TRUE(v.feed("\x98"));
    EXPECT_TRUE(v.feed("\x80 after"));
    EXPECT_TRUE(v.complete());
    EXPECT_FALSE(v.feed("\xff"));
    EXPECT_FALSE(v.feed("ok"));  // stays failed
    v.reset();
    EXPECT_TRUE(v.feed("ok"));
}

TEST(FrameHead, UsesTheShortestLength) {
    std::string out;
    append_frame_head(out, Opcode::text, 125);
    EXPECT_EQ(out, std::string("\x81\x7d", 2));
    out.clear();
    append_frame_head(out, Opcode::binary, 126);
    EXPECT_EQ(out, std::string("\x82\x7e\x00\x7e", 4));
    out.clear();
    append_frame_head(out, Opcode::binary, 65536);
    EXPECT_EQ(out, std::string("\x82\x7f\0\0\0\0\0\x01\0\0", 10));
    EXPECT_EQ(frame_head_size(65536), 10u);
    out.clear();
    append_close_frame(out, 1000, "bye");
    EXPECT_EQ(out, std::string("\x88\x05\x03\xe8" "bye", 7));
}

}  // namespace
}  // namespace cspd::ws
