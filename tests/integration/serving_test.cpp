// The real binary over real sockets: what a client sees.
#include "http_client.hpp"
#include "loopback.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <thread>
#include <utility>
#include <vector>

namespace cspd::test {
namespace {

const std::string kPixelPng = [] {
    const unsigned char bytes[] = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
                                   0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
                                   0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x08,
                                   0x99, 0x63, 0xf8, 0xff, 0xff, 0xff, 0x7f, 0x00, 0x09, 0xfb, 0x03, 0xfd, 0x08, 0xd1,
                                   0xe8, 0x1e, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
    return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}();

class ServingTest : public ::testing::Test {
protected:
    ServingTest() : server({}, false) {
        for (const char* name : {"hello.so", "xpng.so"})
            std::filesystem::copy_file(shipped_handler(name), server.handlers() / name);
        for (const char* name : {"echo.so", "throwing.so", "big.so", "status.so"})
            std::filesystem::copy_file(test_handler(name), server.handlers() / name);
        std::ofstream(server.www() / "index.html") << "<p>static</p>";
        server.start();
    }
    TestServer server;
};

TEST_F(ServingTest, HelloIsByteExact) {
    auto r = fetch(server.port(), "/csp/hello");
    ASSERT_TRUE(r);
    const std::regex expected("HTTP/1\\.1 200 OK\r\nServer: cspd\r\nDate: [A-Z][a-z]{2}, \\d\\d [A-Z][a-z]{2} \\d{4} "
                              "\\d\\d:\\d\\d:\\d\\d GMT\r\nContent-Type: text/html\r\nContent-Length: 20\r\n"
                              "Connection: close\r\n\r\n<h1>HELLO WORLD</h1>");
    EXPECT_TRUE(std::regex_match(r->raw, expected)) << r->raw;
}

TEST_F(ServingTest, XpngIsTheExactPixel) {
    auto r = fetch(server.port(), "/csp/xpng");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("content-type"), "image/png");
    EXPECT_EQ(r->header("content-length"), "70");
    EXPECT_EQ(r->body, kPixelPng);
}

TEST_F(ServingTest, KeepsAConnectionAlive) {
    HttpClient client(server.port());
    for (int i = 0; i < 5; ++i) {
        auto r = client.get(i % 2 ? "/csp/xpng" : "/csp/hello");
        ASSERT_TRUE(r) << "request " << i;
        EXPECT_EQ(r->status, 200);
        EXPECT_FALSE(r->has_header("connection"));
    }
}

TEST_F(ServingTest, AnswersAPipelineInOrder) {
    HttpClient client(server.port());
    client.send("GET /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n"
                "GET /csp/xpng HTTP/1.1\r\nHost: h\r\n\r\n"
                "GET /csp/echo?name=third HTTP/1.1\r\nHost: h\r\n\r\n");
    auto first = client.read_response();
    auto second = client.read_response();
    auto third = client.read_response();
    ASSERT_TRUE(first && second && third);
    EXPECT_EQ(first->body, "<h1>HELLO WORLD</h1>");
    EXPECT_EQ(second->body, kPixelPng);
    EXPECT_NE(third->body.find("name=third\n"), std::string::npos);
}

TEST_F(ServingTest, AnswersADeepPipelineSentInOneWrite) {
    HttpClient client(server.port());
    std::string many;
    for (int i = 0; i < 200; ++i) many += "GET /csp/echo?name=" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    client.send(many);
    for (int i = 0; i < 200; ++i) {
        auto r = client.read_response();
        ASSERT_TRUE(r) << i;
        ASSERT_NE(r->body.find("name=" + std::to_string(i) + "\n"), std::string::npos) << i;
    }
}

TEST_F(ServingTest, HeadHasHeadersButNoBody) {
    HttpClient client(server.port());
    client.send("HEAD /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n");
    auto r = client.read_response(true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("content-length"), "20");
    auto next = client.get("/csp/hello");  // no stray body bytes before the next response
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "<h1>HELLO WORLD</h1>");
}

TEST_F(ServingTest, SpeaksHttp10) {
    HttpClient plain(server.port());
    plain.send("GET /csp/hello HTTP/1.0\r\n\r\n");
    auto r = plain.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_TRUE(plain.closed_by_peer());

    HttpClient kept(server.port());
    kept.send("GET /csp/hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    r = kept.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("connection"), "keep-alive");
    kept.send("GET /csp/xpng HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    r = kept.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, kPixelPng);
}

TEST_F(ServingTest, ReadsContentLengthAndChunkedBodies) {
    HttpClient client(server.port());
    client.send("POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("body=hello world"), std::string::npos);
    client.send("POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                "4\r\nchun\r\n3\r\nked\r\n0\r\n\r\n");
    r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("body-size=7\nbody=chunked"), std::string::npos);
}

TEST_F(ServingTest, SendsALargeHandlerResponseWhole) {
    auto r = fetch(server.port(), "/csp/big");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->body.size(), 1u << 20);
    for (std::size_t i = 0; i < r->body.size(); i += 4099)
        ASSERT_EQ(static_cast<unsigned char>(r->body[i]), i % 256) << i;
}

TEST_F(ServingTest, AnswersMalformedRequestsWith400AndCloses) {
    HttpClient client(server.port());
    client.send("THIS IS NOT HTTP\r\n\r\n");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_TRUE(fetch(server.port(), "/csp/hello"));  // and goes on serving
}

TEST_F(ServingTest, AnswersATooLargeBodyWith413) {
    HttpClient client(server.port());
    client.send("POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999\r\n\r\n");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
}

TEST_F(ServingTest, SurvivesAThrowingHandler) {
    HttpClient client(server.port());
    auto r = client.get("/csp/throwing");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    r = client.get("/csp/hello");  // same connection still works
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(server.wait_for_log("boom from a test handler"));
}

TEST_F(ServingTest, NeverSendsMemoryPastAHandlersReplyBuffer) {
    HttpClient client(server.port());
    auto r = client.get("/csp/status?lie=1");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_LT(r->raw.size(), 1024u);
    EXPECT_TRUE(server.wait_for_log("left its reply buffer inconsistent"));
    EXPECT_EQ(client.get("/csp/hello")->status, 200) << server.log();
}

TEST_F(ServingTest, AnswersUnknownPathsWith404) {
    EXPECT_EQ(fetch(server.port(), "/csp/missing")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/missing.html")->status, 404);
    EXPECT_EQ(fetch(server.port(), "/../../etc/passwd")->status, 404);
}

TEST_F(ServingTest, ServesStaticFiles) {
    auto r = fetch(server.port(), "/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "<p>static</p>");
}

TEST_F(ServingTest, StreamsALargeStaticFileInOrderWithPipelinedRequests) {
    std::string big(3 * 1024 * 1024 + 17, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 % 251);
    std::ofstream(server.www() / "big.bin", std::ios::binary) << big;
    HttpClient client(server.port());
    client.send("GET /big.bin HTTP/1.1\r\nHost: h\r\n\r\nGET /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n"
                "HEAD /big.bin HTTP/1.1\r\nHost: h\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: h\r\n\r\n");
    auto file = client.read_response();
    auto hello = client.read_response();
    auto head = client.read_response(true);
    auto again = client.read_response();
    ASSERT_TRUE(file && hello && head && again);
    EXPECT_EQ(file->header("content-type"), "application/octet-stream");
    EXPECT_TRUE(file->body == big);
    EXPECT_EQ(hello->body, "<h1>HELLO WORLD</h1>");
    EXPECT_EQ(head->header("content-length"), std::to_string(big.size()));
    EXPECT_TRUE(again->body == big);
}

TEST_F(ServingTest, SaysContinueToAClientThatExpectsIt) {
    HttpClient client(server.port());
    client.send("POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    auto interim = client.read_response(true);
    ASSERT_TRUE(interim);
    EXPECT_EQ(interim->status, 100);
    client.send("data");
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("body=data"), std::string::npos);
}

TEST_F(ServingTest, PipelinesPastTheOutputHighWaterMarkInOrder) {
    // 40 MiB of answers to one write of requests: parsing pauses while output drains.
    HttpClient client(server.port(), std::chrono::seconds(20));
    std::string requests;
    for (int i = 0; i < 40; ++i)
        requests += i % 2 ? "GET /csp/big HTTP/1.1\r\nHost: h\r\n\r\n" : "GET /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n";
    client.send(requests);
    for (int i = 0; i < 40; ++i) {
        auto r = client.read_response();
        ASSERT_TRUE(r) << i;
        ASSERT_EQ(r->body.size(), i % 2 ? std::size_t{1} << 20 : 20u) << i;
    }
}

TEST_F(ServingTest, AnIdleConnectionStillAnswersLater) {
    // Idle for two whole ticks, the connection gives its read buffer back and waits parked;
    // 3.2 s is past that wherever in a tick the request fell. It must still work.
    HttpClient client(server.port());
    ASSERT_TRUE(client.get("/csp/hello"));
    std::this_thread::sleep_for(std::chrono::milliseconds(3200));
    auto r = client.get("/csp/xpng");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, kPixelPng);
}

TEST_F(ServingTest, SurvivesClientsThatResetMidResponse) {
    // Resets while a streamed file or a large handler reply is in flight: the write fails with
    // EPIPE/ECONNRESET (and would raise SIGPIPE for sendfile); only that connection may suffer.
    std::ofstream(server.www() / "large.bin", std::ios::binary) << std::string(8 << 20, 'x');
    for (const char* target : {"/large.bin", "/csp/big"}) {
        for (int i = 0; i < 5; ++i) {
            const int fd = connect_loopback(server.port(), 4096);
            ASSERT_GE(fd, 0);
            std::string request = std::string("GET ") + target + " HTTP/1.1\r\nHost: h\r\n\r\n";
            ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
            char some[1024];
            ASSERT_GT(::recv(fd, some, sizeof some, 0), 0);
            linger hard{1, 0};  // close with RST
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
            ::close(fd);
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto r = fetch(server.port(), "/csp/hello");
    ASSERT_TRUE(r) << server.log();
    EXPECT_EQ(r->status, 200);
}

TEST_F(ServingTest, SeesTheClientAddress) {
    auto r = fetch(server.port(), "/csp/echo");
    ASSERT_TRUE(r);
    EXPECT_NE(r->body.find("client=127.0.0.1\n"), std::string::npos) << r->body;
}

TEST_F(ServingTest, A205CarriesNoContentAndTheConnectionGoesOn) {
    // RFC 9110 §15.3.6: no content in a 205, whatever the handler appended; Content-Length: 0 so
    // the client knows where the next response begins.
    HttpClient client(server.port());
    client.send("GET /csp/status?code=205 HTTP/1.1\r\nHost: h\r\n\r\nGET /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n");
    auto reset = client.read_response();
    ASSERT_TRUE(reset);
    EXPECT_EQ(reset->status_line, "HTTP/1.1 205 Reset Content");
    EXPECT_EQ(reset->header("content-length"), "0");
    EXPECT_EQ(reset->body, "");
    auto next = client.read_response();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200);
    EXPECT_EQ(next->body, "<h1>HELLO WORLD</h1>");
}

TEST_F(ServingTest, EveryRegisteredStatusHasItsReasonPhrase) {
    // IANA's HTTP status code registry (RFC 9110 §15 and the RFCs it lists), as a handler returns them.
    const std::vector<std::pair<int, std::string>> registry = {
        {203, "Non-Authoritative Information"}, {205, "Reset Content"}, {207, "Multi-Status"},
        {208, "Already Reported"}, {226, "IM Used"}, {300, "Multiple Choices"}, {305, "Use Proxy"},
        {402, "Payment Required"}, {406, "Not Acceptable"}, {407, "Proxy Authentication Required"},
        {417, "Expectation Failed"}, {421, "Misdirected Request"}, {423, "Locked"}, {424, "Failed Dependency"},
        {425, "Too Early"}, {426, "Upgrade Required"}, {428, "Precondition Required"},
        {451, "Unavailable For Legal Reasons"}, {506, "Variant Also Negotiates"}, {507, "Insufficient Storage"},
        {508, "Loop Detected"}, {510, "Not Extended"}, {511, "Network Authentication Required"},
        {201, "Created"}, {418, "Unknown"}};  // 418 is reserved unused (RFC 9110 §15.5.19)
    HttpClient client(server.port());
    for (const auto& [code, reason] : registry) {
        client.send("GET /csp/status?code=" + std::to_string(code) + " HTTP/1.1\r\nHost: h\r\n\r\n");
        auto r = client.read_response();
        ASSERT_TRUE(r) << code;
        EXPECT_EQ(r->status_line, "HTTP/1.1 " + std::to_string(code) + " " + reason);
    }
}

}  // namespace
}  // namespace cspd::test
