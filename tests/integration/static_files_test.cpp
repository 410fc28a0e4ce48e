// Static files over real sockets, the way nginx serves them: validators (ETag, Last-Modified),
// 304 and 412 for conditional requests, 206 and 416 for ranges (several ranges: the whole file),
// If-Range, precompressed sidecars by Accept-Encoding with Vary, Cache-Control from
// --static-max-age, types from /etc/mime.types; and the host answering handlers' validators.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

class StaticFilesOverSockets : public ::testing::Test {
protected:
    StaticFilesOverSockets() : server({"--static-max-age", "120", "--threads", "1"}, false) {
        write("doc.txt", kText);
        write("big.bin", big());
        write("app.js", "console.log('plain');\n");
        write("app.js.gz", "gzip bytes stand-in");
        write("app.js.br", "brotli bytes stand-in");
        write("style.css", "body{}\n");
        write("style.css.gz", "gz");
        write("font.woff2", "w");
        write("picture.png", "p");
        std::filesystem::create_directories(server.www() / "sub");
        write("sub/index.html", "<p>sub</p>");
        std::filesystem::copy_file(test_handler("toolkit.so"), server.handlers() / "toolkit.so");
        server.start();
    }
    void write(const std::string& name, const std::string& bytes) {
        std::ofstream(server.www() / name, std::ios::binary) << bytes;
    }
    static std::string big() {
        std::string bytes(600 * 1024, '\0');  // over the size sent straight from the file
        for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 26);
        return bytes;
    }
    std::optional<HttpResponse> get(const std::string& target, const std::string& headers = "",
                                    const std::string& method = "GET") {
        HttpClient client(server.port());
        client.send(method + " " + target + " HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
        return client.read_response(method == "HEAD");
    }
    static constexpr const char* kText = "0123456789abcdefghij\n";  // 21 bytes
    TestServer server;
};

TEST_F(StaticFilesOverSockets, CarryValidatorsAndCacheControl) {
    auto r = get("/doc.txt");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, kText);
    EXPECT_TRUE(std::regex_match(r->header("etag"), std::regex("\"[0-9a-f]+-15\"")));
    EXPECT_TRUE(std::regex_match(r->header("last-modified"),
                                 std::regex("[A-Z][a-z]{2}, \\d{2} [A-Z][a-z]{2} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT")));
    EXPECT_EQ(r->header("cache-control"), "max-age=120");
    EXPECT_EQ(r->header("accept-ranges"), "bytes");
    EXPECT_FALSE(r->has_header("vary"));  // no sidecar
    EXPECT_EQ(r->header("content-type"), "text/plain; charset=utf-8");
}

TEST_F(StaticFilesOverSockets, AFolderRedirectKeepsTheQueryString) {
    auto r = get("/sub?x=1&y=a%20b");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 301);
    EXPECT_EQ(r->header("location"), "/sub/?x=1&y=a%20b");
    auto plain = get("/sub");
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->header("location"), "/sub/");
    EXPECT_EQ(get("/sub/?x=1").value_or(HttpResponse{}).body, "<p>sub</p>");
}

TEST_F(StaticFilesOverSockets, ConditionalRequestsGet304And412) {
    const auto first = get("/doc.txt");
    const std::string etag = first->header("etag"), modified = first->header("last-modified");
    auto same = get("/doc.txt", "If-None-Match: " + etag + "\r\n");
    EXPECT_EQ(same->status, 304);
    EXPECT_TRUE(same->body.empty());
    EXPECT_EQ(same->header("etag"), etag);
    EXPECT_EQ(same->header("cache-control"), "max-age=120");
    EXPECT_EQ(get("/doc.txt", "If-None-Match: \"other\", W/" + etag + "\r\n")->status, 304);
    EXPECT_EQ(get("/doc.txt", "If-None-Match: \"other\"\r\n")->status, 200);
    EXPECT_EQ(get("/doc.txt", "If-Modified-Since: " + modified + "\r\n")->status, 304);
    EXPECT_EQ(get("/doc.txt", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n")->status, 200);
    EXPECT_EQ(get("/doc.txt", "If-None-Match: " + etag + "\r\n", "HEAD")->status, 304);
    EXPECT_EQ(get("/doc.txt", "If-Match: \"other\"\r\n")->status, 412);
    EXPECT_EQ(get("/doc.txt", "If-Match: " + etag + "\r\n")->status, 200);
    EXPECT_EQ(get("/doc.txt", "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n")->status, 412);
    EXPECT_EQ(get("/doc.txt", "If-Unmodified-Since: " + modified + "\r\n")->status, 200);
}

TEST_F(StaticFilesOverSockets, OneRangeGets206AndAnUnsatisfiableOne416) {
    auto part = get("/doc.txt", "Range: bytes=2-5\r\n");
    EXPECT_EQ(part->status, 206);
    EXPECT_EQ(part->body, "2345");
    EXPECT_EQ(part->header("content-range"), "bytes 2-5/21");
    EXPECT_EQ(get("/doc.txt", "Range: bytes=-3\r\n")->body, "ij\n");
    EXPECT_EQ(get("/doc.txt", "Range: bytes=17-\r\n")->body, "hij\n");
    auto beyond = get("/doc.txt", "Range: bytes=21-\r\n");
    EXPECT_EQ(beyond->status, 416);
    EXPECT_EQ(beyond->header("content-range"), "bytes */21");
    // Several ranges: the whole file (documented); a malformed one is ignored.
    auto several = get("/doc.txt", "Range: bytes=0-1,4-5\r\n");
    EXPECT_EQ(several->status, 200);
    EXPECT_EQ(several->body, kText);
    EXPECT_EQ(get("/doc.txt", "Range: bytes=5-2\r\n")->status, 200);
    // If-Range: the range only while the file is the one the client has.
    const std::string etag = get("/doc.txt")->header("etag");
    EXPECT_EQ(get("/doc.txt", "Range: bytes=0-1\r\nIf-Range: " + etag + "\r\n")->status, 206);
    EXPECT_EQ(get("/doc.txt", "Range: bytes=0-1\r\nIf-Range: \"stale\"\r\n")->status, 200);
    // A large file's range is sent from the file, from its offset.
    const std::string bytes = big();
    auto tail = get("/big.bin", "Range: bytes=500000-500099\r\n");
    EXPECT_EQ(tail->status, 206);
    EXPECT_EQ(tail->body, bytes.substr(500000, 100));
    auto head = get("/big.bin", "Range: bytes=10-19\r\n", "HEAD");
    EXPECT_EQ(head->status, 206);
    EXPECT_EQ(head->header("content-length"), "10");
    EXPECT_TRUE(head->body.empty());
}

TEST_F(StaticFilesOverSockets, PrecompressedSidecarsAreChosenByAcceptEncoding) {
    auto br = get("/app.js", "Accept-Encoding: gzip, deflate, br\r\n");
    EXPECT_EQ(br->body, "brotli bytes stand-in");
    EXPECT_EQ(br->header("content-encoding"), "br");
    EXPECT_EQ(br->header("vary"), "Accept-Encoding");
    EXPECT_EQ(br->header("content-type"), "text/javascript; charset=utf-8");
    auto gz = get("/app.js", "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(gz->body, "gzip bytes stand-in");
    EXPECT_EQ(gz->header("content-encoding"), "gzip");
    EXPECT_NE(gz->header("etag"), br->header("etag"));  // each representation its own tag
    auto plain = get("/app.js");
    EXPECT_EQ(plain->body, "console.log('plain');\n");
    EXPECT_FALSE(plain->has_header("content-encoding"));
    EXPECT_EQ(plain->header("vary"), "Accept-Encoding");
    EXPECT_EQ(get("/app.js", "Accept-Encoding: br;q=0, gzip;q=0\r\n")->body, "console.log('plain');\n");
    EXPECT_EQ(get("/style.css", "Accept-Encoding: br, gzip\r\n")->header("content-encoding"), "gzip");
    EXPECT_EQ(get("/app.js", "Accept-Encoding: *\r\n")->header("content-encoding"), "br");
}

TEST_F(StaticFilesOverSockets, AFileKeptInMemoryIsServedAnewOnceItChanges) {
    EXPECT_EQ(get("/doc.txt")->body, kText);
    EXPECT_EQ(get("/doc.txt")->body, kText);  // from memory now
    write("doc.txt", "ABCDEFGHIJKLMNOPQRST\n");  // the same size: only the watch can tell
    EXPECT_TRUE(eventually([&] { return get("/doc.txt")->body == "ABCDEFGHIJKLMNOPQRST\n"; }, 2s));
    // A folder made after the start is watched too.
    std::filesystem::create_directories(server.www() / "later" / "deeper");
    write("later/deeper/x.txt", "one\n");
    EXPECT_TRUE(eventually([&] { return get("/later/deeper/x.txt")->body == "one\n"; }, 2s));
    EXPECT_EQ(get("/later/deeper/x.txt")->body, "one\n");
    write("later/deeper/x.txt", "two\n");
    EXPECT_TRUE(eventually([&] { return get("/later/deeper/x.txt")->body == "two\n"; }, 2s));
    std::filesystem::remove(server.www() / "later" / "deeper" / "x.txt");
    EXPECT_TRUE(eventually([&] { return get("/later/deeper/x.txt")->status == 404; }, 2s));
    // A sidecar appearing changes what is sent.
    write("doc.txt.gz", "gz of doc");
    EXPECT_TRUE(eventually([&] { return get("/doc.txt", "Accept-Encoding: gzip\r\n")->body == "gz of doc"; }, 2s));
}

TEST_F(StaticFilesOverSockets, TypesComeFromTheSystemsMimeTable) {
    EXPECT_EQ(get("/font.woff2")->header("content-type"), "font/woff2");
    EXPECT_EQ(get("/picture.png")->header("content-type"), "image/png");
}

TEST_F(StaticFilesOverSockets, AHandlersValidatorsGetTheSameAnswers) {
    const std::string base = "/csp/toolkit/etag?tag=v7&modified=Sun,%2006%20Nov%201994%2008:49:37%20GMT";
    EXPECT_EQ(get(base)->status, 200);
    EXPECT_EQ(get(base, "If-None-Match: \"v7\"\r\n")->status, 304);
    EXPECT_EQ(get(base, "If-None-Match: \"v7\"\r\n")->header("etag"), "\"v7\"");
    EXPECT_EQ(get(base, "If-None-Match: \"v6\"\r\n")->status, 200);
    EXPECT_EQ(get(base, "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n")->status, 304);
    EXPECT_EQ(get(base, "If-Match: \"v6\"\r\n")->status, 412);
    EXPECT_EQ(get("/csp/toolkit/etag", "If-None-Match: *\r\n")->status, 200);  // no validators: as usual
}

TEST(HandlerValidators, AnAnswerTheHostMadeIsNeitherCachedAsTheHandlersNorCountedAsIt) {
    // One worker: one reply cache, one set of counters.
    TestServer server({"--workers", "1"}, false);
    std::filesystem::copy_file(test_handler("toolkit.so"), server.handlers() / "toolkit.so");
    server.start();
    const auto get = [&](const std::string& headers, const std::string& target = "/csp/toolkit/etag?tag=v1&cache=60") {
        HttpClient client(server.port());
        client.send("GET " + target + " HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
        return client.read_response().value_or(HttpResponse{});
    };
    const auto three_xx = [&] {
        const auto metrics = fetch(server.port(), "/metrics");
        const std::string key = "cspd_requests_total{code=\"3xx\"} ";
        const auto at = metrics ? metrics->body.find(key) : std::string::npos;
        return at == std::string::npos ? -1.0 : std::stod(metrics->body.substr(at + key.size()));
    };
    // The first call's answer is a 412 the host made from the handler's 200: the cache keeps the 200.
    EXPECT_EQ(get("If-Match: \"v0\"\r\n").status, 412);
    const HttpResponse plain = get("");
    EXPECT_EQ(plain.status, 200);
    EXPECT_EQ(plain.body, "the representation\n");
    // A 304 for a handler's call (not cached) counts as 3xx for the loop too, as for the handler.
    const double before = three_xx();
    EXPECT_EQ(get("If-None-Match: \"v2\"\r\n", "/csp/toolkit/etag?tag=v2").status, 304);
    EXPECT_EQ(three_xx(), before + 1);
}

TEST(HandlerValidators, ACachedAnswerIsCountedForItsHandlerAsACallsAnswerIs) {
    TestServer server({"--workers", "1"}, false);
    std::filesystem::copy_file(test_handler("toolkit.so"), server.handlers() / "toolkit.so");
    server.start();
    const auto get = [&](const std::string& headers) {
        HttpClient client(server.port());
        client.send("GET /csp/toolkit/etag?tag=v1&cache=60 HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
        return client.read_response().value_or(HttpResponse{}).status;
    };
    const auto handler_count = [&](const char* code) {
        const auto metrics = fetch(server.port(), "/metrics");
        const std::string key = std::string("cspd_handler_requests_total{handler=\"toolkit\",code=\"") + code + "\"} ";
        const auto at = metrics ? metrics->body.find(key) : std::string::npos;
        return at == std::string::npos ? 0.0 : std::stod(metrics->body.substr(at + key.size()));
    };
    ASSERT_EQ(get(""), 200);  // the call; its 200 is kept
    // From the cache: a 412, a 304 and a 200, each counted as the handler's, as a call's would be.
    EXPECT_EQ(get("If-Match: \"v0\"\r\n"), 412);
    EXPECT_EQ(get("If-None-Match: \"v1\"\r\n"), 304);
    EXPECT_EQ(get(""), 200);
    EXPECT_EQ(handler_count("4xx"), 1);
    EXPECT_EQ(handler_count("3xx"), 1);
    EXPECT_EQ(handler_count("2xx"), 2);
}

}  // namespace
}  // namespace cspd::test
