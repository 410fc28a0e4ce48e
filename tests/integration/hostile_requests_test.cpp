// Hostile and malformed requests, each on its own connection over a real socket, with
// the exact status expected; after every one the server must still answer a normal request.
// Expectations follow RFC 9110/9112 and what nginx and h2o do.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace cspd::test {
namespace {

struct Case {
    const char* name;
    std::string request;
    int status;
};

std::string get(const std::string& target, const std::string& extra_headers = "") {
    return "GET " + target + " HTTP/1.1\r\nHost: h\r\n" + extra_headers + "\r\n";
}

std::vector<Case> cases() {
    const std::string big_header = "X-Big: " + std::string(9000, 'a') + "\r\n";
    std::string many_headers;
    for (int i = 0; i < 120; ++i) many_headers += "X-H" + std::to_string(i) + ": v\r\n";
    return {
        // --- controls: well-formed requests are served -------------------------------
        {"plain get", get("/csp/hello"), 200},
        {"http/1.0 without host", "GET /csp/hello HTTP/1.0\r\n\r\n", 200},
        {"head", "HEAD /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 200},
        {"empty header value", get("/csp/hello", "X-Empty:\r\n"), 200},
        {"obs-text in a value", get("/csp/hello", "X-Latin: caf\xe9\r\n"), 200},
        {"absolute-form", "GET http://example.com/csp/hello HTTP/1.1\r\nHost: example.com\r\n\r\n", 200},
        {"absolute-form without path", "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", 200},
        {"options on a handler", "OPTIONS /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 200},
        {"body on get", "GET /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", 200},
        {"well-known file", get("/.well-known/security.txt"), 200},

        // --- framing and smuggling: 400 and close ---------------------------------------
        {"content-length and transfer-encoding",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"transfer-encoding then content-length",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", 400},
        {"differing duplicate content-length",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
        {"content-length list", "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 2\r\n\r\nab", 400},
        {"negative content-length", "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
        {"non-numeric content-length", "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n", 400},
        {"content-length overflow",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
        {"transfer-encoding not ending in chunked",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400},
        {"unknown transfer-encoding", "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc", 400},
        // RFC 9112 §6.1: a coding this server does not decode, before the final chunked: 501.
        {"gzip then chunked",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 501},
        {"identity then chunked",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 501},
        {"gzip and chunked in two fields",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
         "3\r\nabc\r\n0\r\n\r\n", 501},
        {"chunked twice (RFC 9112 §7.1: never applied twice)",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400},
        {"chunked alone, any case",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200},
        {"bad chunk size",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", 400},
        {"chunk size overflow",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nab\r\n", 400},
        {"chunk longer than its size",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n", 400},
        {"chunk without crlf",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab0\r\n\r\n", 400},
        {"chunk extension with a control byte",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;\x01\r\nab\r\n0\r\n\r\n", 400},
        {"obsolete line folding", "GET /csp/hello HTTP/1.1\r\nHost: h\r\nX-Folded: a\r\n b\r\n\r\n", 400},
        {"bare cr in a value", "GET /csp/hello HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400},
        {"nul in a value", std::string("GET /csp/hello HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 41), 400},
        {"nul in a name", std::string("GET /csp/hello HTTP/1.1\r\nHost: h\r\nX\0A: b\r\n\r\n", 40), 400},
        {"space before colon", "GET /csp/hello HTTP/1.1\r\nHost : h\r\n\r\n", 400},
        {"space in a name", "GET /csp/hello HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n", 400},
        {"header without colon", "GET /csp/hello HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400},
        {"whitespace before the first header", "GET /csp/hello HTTP/1.1\r\n Host: h\r\n\r\n", 400},

        // --- request line -------------------------------------------------------------
        {"invalid method", "G@T /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"unknown method", "FROB /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"lower-case method", "get /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"http/1.2", "GET /csp/hello HTTP/1.2\r\nHost: h\r\n\r\n", 400},
        {"http/3.0", "GET /csp/hello HTTP/3.0\r\nHost: h\r\n\r\n", 400},
        {"http/2.0 in http/1 syntax", "GET /csp/hello HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        {"http/0.9 request line", "GET /csp/hello\r\nHost: h\r\n\r\n", 505},
        {"garbage version", "GET /csp/hello HTTP/x.y\r\nHost: h\r\n\r\n", 400},
        {"space in target", "GET /csp/hel lo HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"tab in target", "GET /csp/hel\tlo HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"not http at all", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n", 400},
        {"missing host", "GET /csp/hello HTTP/1.1\r\n\r\n", 400},
        {"two hosts", "GET /csp/hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"host with a space", "GET /csp/hello HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
        {"host with a slash", "GET /csp/hello HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
        {"host with userinfo", "GET /csp/hello HTTP/1.1\r\nHost: user@a\r\n\r\n", 400},
        {"host with a bad port", "GET /csp/hello HTTP/1.1\r\nHost: a:8x\r\n\r\n", 400},
        {"host with a bad escape", "GET /csp/hello HTTP/1.1\r\nHost: a%zz\r\n\r\n", 400},
        {"unclosed ip literal", "GET /csp/hello HTTP/1.1\r\nHost: [::1\r\n\r\n", 400},
        {"bad host on http/1.0", "GET /csp/hello HTTP/1.0\r\nHost: a<b\r\n\r\n", 400},
        {"host with a port", "GET /csp/hello HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 200},
        {"ipv6 host", "GET /csp/hello HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200},
        {"ipv4 host", "GET /csp/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200},
        {"empty host", "GET /csp/hello HTTP/1.1\r\nHost:\r\n\r\n", 200},
        {"host with whitespace after it", "GET /csp/hello HTTP/1.1\r\nHost: example.com \t\r\n\r\n", 200},
        {"two spaces before the target", "GET  /csp/hello HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"two spaces before the version", "GET /csp/hello  HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 400},
        {"authority-form connect", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400},

        // --- sizes ----------------------------------------------------------------------
        {"headers over 8 KiB", get("/csp/hello", big_header), 431},
        {"url over 8 KiB", get("/csp/hello?q=" + std::string(9000, 'a')), 414},
        {"too many headers", get("/csp/hello", many_headers), 431},
        {"declared body over 1 MiB", "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", 413},
        {"chunked body over 1 MiB",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n" +
             std::string(0x100000, 'b') + "\r\n10\r\n" + std::string(16, 'c') + "\r\n0\r\n\r\n",
         413},
        {"expect-continue with too large a body",
         "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n", 413},

        // --- paths: never outside www, never a handler that is not there ------------------
        {"dot-dot", get("/../../etc/passwd"), 404},
        {"dot-dot after a folder", get("/sub/../../secret.txt"), 404},
        {"encoded dot-dot", get("/%2e%2e/secret.txt"), 404},
        {"encoded dot-dot and slash", get("/%2e%2e%2fsecret.txt"), 404},
        {"upper-case encoded dot-dot", get("/%2E%2E%2Fsecret.txt"), 404},
        {"double-encoded dot-dot", get("/%252e%252e%252fsecret.txt"), 404},
        {"encoded backslash", get("/..%5csecret.txt"), 404},
        {"encoded nul", get("/index.html%00.txt"), 400},
        {"broken escape", get("/a%zzb"), 400},
        {"truncated escape", get("/abc%2"), 400},
        {"symlink out of www", get("/escape.txt"), 404},
        {"dot file", get("/.env"), 404},
        {"encoded dot file", get("/%2eenv"), 404},
        {"absolute-form escaping", "GET http://h/../secret.txt HTTP/1.1\r\nHost: h\r\n\r\n", 404},
        {"delete on a static file", "DELETE /index.html HTTP/1.1\r\nHost: h\r\n\r\n", 405},
        {"handler name with dot-dot", get("/csp/../csp/hello.so"), 404},
        {"handler file name", get("/csp/hello.so"), 404},
        {"handler name with encoded slash", get("/csp/hel%2Flo"), 404},
        {"handler name with encoded nul", get("/csp/hel%00lo"), 400},
        {"handler name case", get("/csp/HELLO"), 404},
        {"handler with a trailing slash (its path_info is \"/\")", get("/csp/hello/"), 200},
        {"handler name too long", get("/csp/" + std::string(300, 'a')), 404},
        {"handler name with a space", get("/csp/hel%20lo"), 404},
        {"handler outside the folder", get("/csp/..%2fsecret"), 404},
    };
}

class HostileRequestsTest : public ::testing::Test {
protected:
    HostileRequestsTest() : server({}, false) {
        std::filesystem::copy_file(shipped_handler("hello.so"), server.handlers() / "hello.so");
        std::filesystem::copy_file(test_handler("echo.so"), server.handlers() / "echo.so");
        std::filesystem::create_directories(server.www() / "sub");
        std::filesystem::create_directories(server.www() / ".well-known");
        std::ofstream(server.www() / "index.html") << "<p>index</p>";
        std::ofstream(server.www() / ".env") << "SECRET=1";
        std::ofstream(server.www() / ".well-known" / "security.txt") << "Contact: nobody";
        std::ofstream(server.www().parent_path() / "secret.txt") << "outside";
        std::filesystem::create_symlink(server.www().parent_path() / "secret.txt", server.www() / "escape.txt");
        server.start();
    }
    TestServer server;
};

TEST_F(HostileRequestsTest, EachGetsItsExactStatusAndTheServerGoesOn) {
    const auto all = cases();
    ASSERT_GE(all.size(), 60u);
    for (const Case& c : all) {
        SCOPED_TRACE(c.name);
        std::optional<HttpResponse> r;
        try {
            HttpClient client(server.port());
            client.send(c.request);
            r = client.read_response(c.request.rfind("HEAD ", 0) == 0);
            // After a malformed request nothing on the connection can be trusted: it is closed.
            const bool malformed =
                r && (r->status == 400 || r->status == 413 || r->status == 414 || r->status == 431 || r->status == 501 ||
                      r->status == 505);
            if (malformed) {
                EXPECT_EQ(r->header("connection"), "close");
            }
            if (r && r->status >= 200) {
                EXPECT_EQ(r->body.find("outside"), std::string::npos);
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << "client error: " << e.what();
        }
        ASSERT_TRUE(r) << "no response";
        EXPECT_EQ(r->status, c.status) << r->raw.substr(0, 200);
        auto normal = fetch(server.port(), "/csp/hello");
        ASSERT_TRUE(normal && normal->status == 200) << "server stopped answering after: " << c.name;
    }
}

}  // namespace
}  // namespace cspd::test
