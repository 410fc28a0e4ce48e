// Access log lines: nginx's combined format byte for byte, and JSON that always parses, whatever
// bytes a client put in its request line and headers.
#include "routing/access_log_line.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

namespace cspd {
namespace {

// 2026-12-02 16:28:33.123456 UTC
constexpr std::int64_t kWhen = 1796228913123456;

class AccessLogLine : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }

    static AccessRecord typical() {
        AccessRecord r;
        r.unix_us = kWhen;
        r.client_address = "192.0.2.7";
        r.client_port = 51000;
        r.method = "GET";
        r.target = "/csp/hello?x=1";
        r.status = 200;
        r.bytes = 150;
        r.body_bytes = 13;
        r.referer = "https://example.com/";
        r.user_agent = "curl/7.88.1";
        r.duration_us = 42;
        r.responder = Responder::handler;
        r.handler = "hello";
        r.handler_hash = 0x0123456789abcdef;
        r.request_id = "5f3a9c01-2a";
        r.worker = 3;
        return r;
    }

    std::string line(const AccessRecord& r, AccessLogFormat format) {
        std::string out;
        append_access_line(out, r, format, time);
        return out;
    }

    AccessTime time;
};

TEST_F(AccessLogLine, CombinedIsNginxsFormatByteForByte) {
    EXPECT_EQ(line(typical(), AccessLogFormat::combined),
              "192.0.2.7 - - [02/Dec/2026:16:28:33 +0000] \"GET /csp/hello?x=1 HTTP/1.1\" 200 13 "
              "\"https://example.com/\" \"curl/7.88.1\"\n");
    AccessRecord bare = typical();
    bare.referer = bare.user_agent = {};
    bare.http_minor = 0;
    bare.body_bytes = 0;
    EXPECT_EQ(line(bare, AccessLogFormat::combined),
              "192.0.2.7 - - [02/Dec/2026:16:28:33 +0000] \"GET /csp/hello?x=1 HTTP/1.0\" 200 0 \"-\" \"-\"\n");
}

TEST_F(AccessLogLine, ARequestThatCouldNotBeParsedIsADash) {
    AccessRecord r = typical();
    r.method = r.target = {};
    r.status = 400;
    r.referer = r.user_agent = {};
    EXPECT_EQ(line(r, AccessLogFormat::combined),
              "192.0.2.7 - - [02/Dec/2026:16:28:33 +0000] \"-\" 400 13 \"-\" \"-\"\n");
}

TEST_F(AccessLogLine, CombinedEscapesWhatCouldForgeALineOrAField) {
    AccessRecord r = typical();
    r.target = "/a\"b\\c\r\n1.2.3.4 - - [x] \"GET / HTTP/1.1\" 200";
    r.user_agent = std::string_view("ua\x01\x7f\xff\"", 6);
    const std::string text = line(r, AccessLogFormat::combined);
    EXPECT_EQ(text.find('\n'), text.size() - 1);  // one line
    EXPECT_NE(text.find("/a\\x22b\\x5Cc\\x0D\\x0A1.2.3.4"), std::string::npos);
    EXPECT_NE(text.find("\"ua\\x01\\x7F\\xFF\\x22\"\n"), std::string::npos);
}

TEST_F(AccessLogLine, JsonCarriesEveryField) {
    const std::string text = line(typical(), AccessLogFormat::json);
    ASSERT_EQ(text.back(), '\n');
    const auto doc = nlohmann::json::parse(text);
    EXPECT_EQ(doc["time"], "2026-12-02T16:28:33.123Z");
    EXPECT_EQ(doc["client"], "192.0.2.7");
    EXPECT_EQ(doc["port"], 51000);
    EXPECT_EQ(doc["method"], "GET");
    EXPECT_EQ(doc["target"], "/csp/hello?x=1");
    EXPECT_EQ(doc["protocol"], "HTTP/1.1");
    EXPECT_EQ(doc["status"], 200);
    EXPECT_EQ(doc["bytes"], 150);
    EXPECT_EQ(doc["body_bytes"], 13);
    EXPECT_EQ(doc["referer"], "https://example.com/");
    EXPECT_EQ(doc["user_agent"], "curl/7.88.1");
    EXPECT_EQ(doc["duration_us"], 42);
    EXPECT_EQ(doc["responder"], "handler");
    EXPECT_EQ(doc["handler"], "hello");
    EXPECT_EQ(doc["handler_hash"], "0123456789abcdef");
    EXPECT_EQ(doc["cached"], false);
    EXPECT_EQ(doc["request_id"], "5f3a9c01-2a");
    EXPECT_EQ(doc["worker"], 3);
    EXPECT_FALSE(doc.contains("intended_status"));

    AccessRecord gone = typical();
    gone.status = 499;
    gone.intended_status = 200;
    gone.responder = Responder::static_file;
    const auto left = nlohmann::json::parse(line(gone, AccessLogFormat::json));
    EXPECT_EQ(left["status"], 499);
    EXPECT_EQ(left["intended_status"], 200);
    EXPECT_EQ(left["responder"], "static");
    EXPECT_FALSE(left.contains("handler"));
}

TEST_F(AccessLogLine, JsonStaysValidWhateverTheClientSent) {
    AccessRecord r = typical();
    // Quotes, backslashes, control bytes, valid UTF-8, and bytes that are not UTF-8 at all
    // (a lone continuation byte, an overlong form, a surrogate, a cut sequence).
    const std::string target = std::string("/q\"\\\x01\x1f\x7f") + "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" +
                               "\x80\xc0\xaf\xed\xa0\x80\xe2\x82";
    r.target = target;
    r.user_agent = "\"},{\"status\":200";
    const std::string text = line(r, AccessLogFormat::json);
    EXPECT_EQ(text.find('\n'), text.size() - 1);
    nlohmann::json doc;
    ASSERT_NO_THROW(doc = nlohmann::json::parse(text)) << text;
    const std::string got = doc["target"];
    EXPECT_EQ(got.substr(0, 8), "/q\"\\\x01\x1f\x7f\xc3");
    EXPECT_NE(got.find("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), std::string::npos);  // valid UTF-8 kept
    EXPECT_NE(got.find("\xef\xbf\xbd"), std::string::npos);  // the rest replaced
    EXPECT_EQ(doc["user_agent"], "\"},{\"status\":200");
    EXPECT_EQ(doc["status"], 200);
    EXPECT_EQ(doc.size(), nlohmann::json::parse(line(typical(), AccessLogFormat::json)).size());
}

TEST_F(AccessLogLine, TheHeadOfAResponseIsMeasuredUpToItsBlankLine) {
    EXPECT_EQ(response_head_size("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"), 25u);
    EXPECT_EQ(response_head_size("HTTP/1.1 200 OK\r\n"), 17u);  // no end yet: all of it
}

}  // namespace
}  // namespace cspd
