// Compressed handler answers (issue 42's first part: buffered, deferred and cached answers),
// decoded by real decoders: curl --compressed, and Python's gzip, brotli and zstandard, over
// HTTP/1.1 and HTTP/2 (curl --http2-prior-knowledge). Negotiation, exclusions, Vary, weak ETags.
#include "command.hpp"
#include "http_client.hpp"
#include "loopback.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cspd::test {
namespace {

using namespace std::chrono_literals;

const std::string kDecoder = std::string(CSPD_TEST_SOURCE_DIR) + "/integration/decode_body.py";

class Compression : public ::testing::Test {
protected:
    void start(std::vector<std::string> args = {}) {
        server_.emplace(args, false);
        std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / "compressible.so",
                                   server_->handlers() / "compressible.so");
        server_->start();
        ASSERT_TRUE(server_->wait_for_log("loaded compressible.so")) << server_->log();
    }
    /// One HTTP/1.1 request with `fields` (lines ending in CRLF).
    HttpResponse get(const std::string& target, const std::string& fields = "", bool head = false) {
        HttpClient client(server_->port());
        client.send(std::string(head ? "HEAD " : "GET ") + target + " HTTP/1.1\r\nHost: t\r\n" + fields + "\r\n");
        auto response = client.read_response(head);
        EXPECT_TRUE(response);
        return response.value_or(HttpResponse{});
    }
    /// `body` decoded from `coding` by Python's decoder for it.
    std::string decoded(const std::string& coding, const std::string& body) {
        const auto file = dir_ / "body";
        std::ofstream(file, std::ios::binary) << body;
        return run_command("/usr/bin/python3 " + kDecoder + " " + coding + " " + file.string());
    }
    /// curl over HTTP/2 (prior knowledge): the headers (lower-cased names) and the body as sent.
    std::map<std::string, std::string> curl_h2(const std::string& target, const std::string& accept, std::string& body) {
        const auto head = dir_ / "head", out = dir_ / "out";
        run_command("curl -s --http2-prior-knowledge -H 'Accept-Encoding: " + accept + "' -D " + head.string() +
                    " -o " + out.string() + " 'http://127.0.0.1:" + std::to_string(server_->port()) + target + "'");
        std::ifstream in(head);
        std::map<std::string, std::string> fields;
        for (std::string line; std::getline(in, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const std::size_t colon = line.find(": ");
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            fields[name] = line.substr(colon + 2);
        }
        std::ifstream body_in(out, std::ios::binary);
        body.assign(std::istreambuf_iterator<char>(body_in), {});
        return fields;
    }
    TempDir dir_;
    std::optional<TestServer> server_;
};

TEST_F(Compression, EachCodingDecodesToTheSameBytesOverHttp1AndHttp2) {
    start();
    const std::string target = "/csp/compressible?size=20000";
    const HttpResponse plain = get(target);
    ASSERT_EQ(plain.status, 200);
    ASSERT_EQ(plain.body.size(), 20000u);
    EXPECT_FALSE(plain.has_header("content-encoding"));  // asked for none
    EXPECT_EQ(plain.header("vary"), "Accept-Encoding");  // but it varies with what is asked
    for (const std::string coding : {"zstd", "br", "gzip"}) {
        SCOPED_TRACE(coding);
        const HttpResponse h1 = get(target, "Accept-Encoding: " + coding + "\r\n");
        EXPECT_EQ(h1.header("content-encoding"), coding);
        EXPECT_EQ(h1.header("vary"), "Accept-Encoding");
        EXPECT_EQ(h1.header("content-length"), std::to_string(h1.body.size()));  // known whole: not chunked
        EXPECT_LT(h1.body.size(), plain.body.size() / 3);
        EXPECT_EQ(decoded(coding, h1.body), plain.body);
        std::string h2_body;
        const auto h2 = curl_h2(target, coding, h2_body);
        EXPECT_EQ(h2.count("content-encoding") ? h2.at("content-encoding") : "", coding);
        EXPECT_EQ(h2.count("vary") ? h2.at("vary") : "", "Accept-Encoding");
        EXPECT_EQ(decoded(coding, h2_body), plain.body);
    }
    // curl's own decoders, as a browser would: it offers what it has built in.
    const std::string url = "http://127.0.0.1:" + std::to_string(server_->port()) + target;
    EXPECT_EQ(run_command("curl -s --compressed '" + url + "'"), plain.body);
    EXPECT_EQ(run_command("curl -s --compressed --http2-prior-knowledge '" + url + "'"), plain.body);
}

TEST_F(Compression, NegotiationFollowsQValuesAndTheServersOrder) {
    start({"--compress-encodings", "gzip,zstd"});
    const std::string target = "/csp/compressible";
    const auto coding_for = [&](const std::string& accept) {
        return get(target, "Accept-Encoding: " + accept + "\r\n").header("content-encoding");
    };
    EXPECT_EQ(coding_for("zstd, br, gzip"), "gzip");        // equal q: the server's order
    EXPECT_EQ(coding_for("zstd;q=1, gzip;q=0.5"), "zstd");  // the client's q first
    EXPECT_EQ(coding_for("br"), "");                          // not offered: identity
    EXPECT_EQ(coding_for("gzip;q=0, zstd;q=0"), "");
    EXPECT_EQ(coding_for("*"), "gzip");
    EXPECT_EQ(coding_for("gzip;q=0.4, identity;q=0.9"), "");
}

TEST_F(Compression, WhatIsNotCompressedGoesAsItIsAndSaysWhy) {
    start({"--compress-min-size", "1000"});
    const std::string ae = "Accept-Encoding: gzip, br, zstd\r\n";
    // Below the minimum: no coding, and no Vary (the answer is the same whatever is asked).
    HttpResponse small = get("/csp/compressible?size=999", ae);
    EXPECT_FALSE(small.has_header("content-encoding"));
    EXPECT_FALSE(small.has_header("vary"));
    EXPECT_EQ(small.body.size(), 999u);
    EXPECT_EQ(get("/csp/compressible?size=1000", ae).header("content-encoding"), "zstd");
    // Types not listed, whatever their size.
    for (const std::string type : {"image/png", "application/octet-stream", "video/mp4"}) {
        const HttpResponse other = get("/csp/compressible?type=" + type, ae);
        EXPECT_FALSE(other.has_header("content-encoding")) << type;
        EXPECT_FALSE(other.has_header("vary")) << type;
    }
    EXPECT_EQ(get("/csp/compressible?type=text/html;charset=utf-8", ae).header("content-encoding"), "zstd");
    EXPECT_EQ(get("/csp/compressible?type=application/problem%2Bjson", ae).header("content-encoding"), "zstd");
    // Cache-Control: no-transform, and a Content-Encoding of the handler's own, are left alone.
    const HttpResponse kept = get("/csp/compressible?cc=no-transform", ae);
    EXPECT_FALSE(kept.has_header("content-encoding"));
    EXPECT_EQ(kept.body.size(), 4096u);
    const HttpResponse own = get("/csp/compressible?ce=gzip", ae);
    EXPECT_EQ(own.header("content-encoding"), "gzip");
    EXPECT_EQ(own.body.size(), 4096u);  // not compressed a second time
    // 206 is never compressed; other statuses with a body are (a JSON 404, say).
    EXPECT_FALSE(get("/csp/compressible?status=206", ae).has_header("content-encoding"));
    EXPECT_EQ(get("/csp/compressible?status=404", ae).header("content-encoding"), "zstd");
}

TEST_F(Compression, HeadSaysWhatGetWouldAndWeakETagsStillMatch) {
    start();
    const std::string ae = "Accept-Encoding: gzip\r\n";
    const HttpResponse got = get("/csp/compressible?etag=1", ae);
    EXPECT_EQ(got.header("etag"), "W/\"v1-rows\"");  // another representation: a weak validator
    const HttpResponse head = get("/csp/compressible?etag=1", ae, true);
    EXPECT_EQ(head.header("content-encoding"), "gzip");
    EXPECT_EQ(head.header("content-length"), got.header("content-length"));
    EXPECT_EQ(head.header("etag"), got.header("etag"));
    EXPECT_TRUE(head.body.empty());
    // Uncompressed, the handler's strong ETag goes as it is.
    EXPECT_EQ(get("/csp/compressible?etag=1").header("etag"), "\"v1-rows\"");
    // If-None-Match with either validator: 304, saying the variant's ETag and Vary.
    for (const std::string etag : {"W/\"v1-rows\"", "\"v1-rows\""}) {
        const HttpResponse again = get("/csp/compressible?etag=1", ae + "If-None-Match: " + etag + "\r\n");
        EXPECT_EQ(again.status, 304) << etag;
        EXPECT_EQ(again.header("etag"), "W/\"v1-rows\"");
        EXPECT_EQ(again.header("vary"), "Accept-Encoding");
        EXPECT_TRUE(again.body.empty());
    }
}

TEST_F(Compression, AHandlersVaryIsMergedAndNoCompressTurnsItAllOff) {
    start();
    const std::string ae = "Accept-Encoding: zstd\r\n";
    EXPECT_EQ(get("/csp/compressible?vary=Cookie", ae).header("vary"), "Cookie, Accept-Encoding");
    EXPECT_EQ(get("/csp/compressible?vary=accept-encoding", ae).header("vary"), "accept-encoding");
    EXPECT_EQ(get("/csp/compressible?vary=*", ae).header("vary"), "*");
    server_.reset();
    start({"--no-compress"});
    const HttpResponse off = get("/csp/compressible", ae);
    EXPECT_FALSE(off.has_header("content-encoding"));
    EXPECT_FALSE(off.has_header("vary"));
    EXPECT_EQ(off.body.size(), 4096u);
}

TEST_F(Compression, AHandlerMayTurnItOffAndOneBuiltFor24GetsTheDefault) {
    start();
    const std::string ae = "Accept-Encoding: gzip\r\n";
    const HttpResponse off = get("/csp/compressible?off=1", ae);  // csp_reply_compress(CSP_COMPRESS_OFF)
    EXPECT_EQ(off.status, 200);
    EXPECT_FALSE(off.has_header("content-encoding"));
    EXPECT_FALSE(off.has_header("vary"));
    EXPECT_EQ(off.body.size(), 4096u);
    EXPECT_EQ(get("/csp/compressible", ae).header("content-encoding"), "gzip");
    // The same source built against the frozen 2.4 header: it loads, and the default applies.
    std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / "abi2_4" / "compressible.so",
                               server_->handlers() / "old.so");
    ASSERT_TRUE(server_->wait_for_log("loaded old.so")) << server_->log();
    const HttpResponse old = get("/csp/old?off=1", ae);
    EXPECT_EQ(old.status, 200);
    EXPECT_EQ(old.header("content-encoding"), "gzip");
    EXPECT_EQ(decoded("gzip", old.body).size(), 4096u);
}

TEST_F(Compression, ACachedReplyIsCompressedOncePerCodingAndCounted) {
    start({"--workers", "1", "--threads", "1"});
    const std::string target = "/csp/compressible?size=10000&cache=60";
    const HttpResponse plain = get(target);
    ASSERT_EQ(plain.body.size(), 10000u);
    std::string first;
    for (int i = 0; i < 5; ++i) {
        const HttpResponse hit = get(target, "Accept-Encoding: zstd\r\n");
        EXPECT_EQ(hit.header("content-encoding"), "zstd");
        if (i == 0) first = hit.body;
        EXPECT_EQ(hit.body, first);  // the kept body
    }
    EXPECT_EQ(decoded("zstd", first), plain.body);
    const HttpResponse gzip = get(target, "Accept-Encoding: gzip\r\n");
    EXPECT_EQ(decoded("gzip", gzip.body), plain.body);
    const unsigned short port = server_->port();
    EXPECT_EQ(metric(port, "cspd_compressed_responses_total{encoding=\"zstd\"}"), 5);
    EXPECT_EQ(metric(port, "cspd_compressed_responses_total{encoding=\"gzip\"}"), 1);
    EXPECT_EQ(metric(port, "cspd_compressed_responses_total{encoding=\"br\"}"), 0);
    // Compressed once for zstd and once for gzip, however many hits.
    EXPECT_EQ(metric(port, "cspd_compression_bytes_total{direction=\"in\"}"), 20000);
    EXPECT_EQ(metric(port, "cspd_compression_bytes_total{direction=\"out\"}"),
              double(first.size() + gzip.body.size()));
    EXPECT_GT(metric(port, "cspd_reply_cache_hits_total"), 5);
}

TEST_F(Compression, EachPieceOfAStreamIsFlushedAndDecodesAsItComes) {
    start();
    std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / "stream.so",
                               server_->handlers() / "stream.so");
    ASSERT_TRUE(server_->wait_for_log("loaded stream.so")) << server_->log();
    const std::string script = std::string(CSPD_TEST_SOURCE_DIR) + "/integration/compressed_stream.py";
    std::string expected;
    for (int i = 20; i > 0; --i) expected += "tick " + std::to_string(i) + "\n";
    const std::string port = std::to_string(server_->port());
    for (const std::string coding : {"zstd", "br", "gzip"}) {
        // Twenty writes 10 ms apart: each comes as its own chunk, and each decodes whole at once.
        EXPECT_EQ(run_command("/usr/bin/python3 " + script + " " + port + " /csp/stream/timer?n=20 " + coding + " 20 2>&1"),
                  expected)
            << coding;
    }
    // Over HTTP/2, curl decodes it as it comes.
    EXPECT_EQ(run_command("curl -s --compressed --http2-prior-knowledge 'http://127.0.0.1:" + port +
                          "/csp/stream/timer?n=20'"),
              expected);
    // A HEAD says what the GET would, and ends with its head.
    const HttpResponse head = get("/csp/stream/timer?n=3", "Accept-Encoding: br\r\n", true);
    EXPECT_EQ(head.header("content-encoding"), "br");
    EXPECT_TRUE(head.body.empty());
    // Counted as the whole answers are: one response per coding, and the coders' bytes.
    EXPECT_GE(metric(server_->port(), "cspd_compressed_responses_total{encoding=\"zstd\"}"), 1);
    EXPECT_GE(metric(server_->port(), "cspd_compression_bytes_total{direction=\"in\"}"), 3 * double(expected.size()));
}

TEST_F(Compression, StaticFilesWithoutASidecarAreCompressedOnceAndKept) {
    start({"--workers", "1", "--threads", "1"});
    std::string page = "<!doctype html><title>t</title>";
    for (int i = 0; page.size() < 30000; ++i) page += "<p class=row>row " + std::to_string(i) + " of the table</p>\n";
    std::ofstream(server_->www() / "page.html") << page;
    std::ofstream(server_->www() / "logo.png") << std::string(30000, 'x');  // not a compressible type
    const std::string ae = "Accept-Encoding: zstd, br, gzip\r\n";
    const HttpResponse first = get("/page.html", ae);
    ASSERT_EQ(first.status, 200);
    EXPECT_EQ(first.header("content-encoding"), "zstd");
    EXPECT_EQ(first.header("vary"), "Accept-Encoding");
    EXPECT_TRUE(first.header("etag").starts_with("W/\"")) << first.header("etag");
    EXPECT_EQ(decoded("zstd", first.body), page);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(get("/page.html", ae).body, first.body);
    const unsigned short port = server_->port();
    EXPECT_EQ(metric(port, "cspd_compressed_responses_total{encoding=\"zstd\"}"), 4);
    EXPECT_EQ(metric(port, "cspd_compression_bytes_total{direction=\"in\"}"), double(page.size()));  // once
    // Each coding decodes to the file; without Accept-Encoding it goes as it is, saying Vary.
    EXPECT_EQ(decoded("br", get("/page.html", "Accept-Encoding: br\r\n").body), page);
    EXPECT_EQ(decoded("gzip", get("/page.html", "Accept-Encoding: gzip\r\n").body), page);
    const HttpResponse plain = get("/page.html");
    EXPECT_EQ(plain.body, page);
    EXPECT_EQ(plain.header("vary"), "Accept-Encoding");
    EXPECT_FALSE(plain.header("etag").starts_with("W/"));
    // HEAD: the GET's headers. A Range: 206, as it is. If-None-Match with the weak ETag: 304.
    const HttpResponse head = get("/page.html", ae, true);
    EXPECT_EQ(head.header("content-encoding"), "zstd");
    EXPECT_EQ(head.header("content-length"), std::to_string(first.body.size()));
    const HttpResponse part = get("/page.html", ae + "Range: bytes=0-99\r\n");
    EXPECT_EQ(part.status, 206);
    EXPECT_FALSE(part.has_header("content-encoding"));
    EXPECT_EQ(part.body, page.substr(0, 100));
    const HttpResponse again = get("/page.html", ae + "If-None-Match: " + first.header("etag") + "\r\n");
    EXPECT_EQ(again.status, 304);
    EXPECT_EQ(again.header("etag"), first.header("etag"));
    // Other types go as they are, without Vary.
    const HttpResponse logo = get("/logo.png", ae);
    EXPECT_FALSE(logo.has_header("content-encoding"));
    EXPECT_FALSE(logo.has_header("vary"));
    // A changed file is a new identity: never the old body once the change is seen (the loop's
    // cache of small files hears of it from inotify, a moment after the write).
    const std::string changed = page + "<p>one more</p>\n";
    std::ofstream(server_->www() / "page.html") << changed;
    EXPECT_TRUE(eventually([&] { return decoded("zstd", get("/page.html", ae).body) == changed; }, 5s));
    // The curl a user types gets the page back.
    EXPECT_EQ(run_command("curl -s --compressed http://127.0.0.1:" + std::to_string(port) + "/page.html"), changed);
}

TEST_F(Compression, NodesZlibDecodesGzipAndBrotli) {
    start();
    const std::string url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/csp/compressible?size=12000";
    const std::string plain = get("/csp/compressible?size=12000").body;
    for (const std::string coding : {"gzip", "br"}) {
        const std::string out = run_command("node " + std::string(CSPD_TEST_SOURCE_DIR) + "/integration/node_decode.mjs '" +
                                            url + "' " + coding);
        const auto result = nlohmann::json::parse(out);
        EXPECT_EQ(result.at("encoding").get<std::string>(), coding);
        EXPECT_LT(result.at("wire").get<int>(), 12000 / 3);
        EXPECT_EQ(result.at("body").get<std::string>(), plain) << coding;
    }
}

// ---- One table: negotiation, exclusions, Vary, ETags, HEAD, framing per protocol, the reply
// cache, streams and static files, each answer checked against the rules a cache relies on.

/// One answer as it came: status, fields (names lower-cased), how its body was framed, the body.
struct CodedAnswer {
    int status = 0;
    std::multimap<std::string, std::string> fields;
    std::string framing;  // "length", "chunked", "close" or "none"
    std::string body;     // as sent (still encoded), de-chunked
    std::string field(const std::string& name) const {
        const auto it = fields.find(name);
        return it == fields.end() ? "" : it->second;
    }
};

/// HTTP/1.x over a raw socket, read until the server closes (the request asks it to).
CodedAnswer coded_exchange(unsigned short port, const std::string& request, bool head) {
    const int fd = connect_loopback(port);
    CodedAnswer answer;
    if (fd < 0) return answer;
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string raw;
    char chunk[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) break;
        raw.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const std::size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos) return answer;
    std::istringstream lines(raw.substr(0, end));
    std::string line;
    std::getline(lines, line);
    answer.status = std::atoi(line.substr(line.find(' ') + 1).c_str());
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const std::size_t colon = line.find(": ");
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        answer.fields.emplace(name, line.substr(colon + 2));
    }
    std::string rest = raw.substr(end + 4);
    if (head || answer.status == 304 || answer.status == 204) {
        answer.framing = "none";
    } else if (answer.field("transfer-encoding") == "chunked") {
        answer.framing = "chunked";
        for (std::size_t at = 0;;) {
            const std::size_t line_end = rest.find("\r\n", at);
            if (line_end == std::string::npos) break;
            const std::size_t size = std::stoul(rest.substr(at, line_end - at), nullptr, 16);
            if (size == 0) break;
            answer.body += rest.substr(line_end + 2, size);
            at = line_end + 2 + size + 2;
        }
    } else if (answer.fields.count("content-length")) {
        answer.framing = "length";
        answer.body = rest.substr(0, std::stoul(answer.field("content-length")));
    } else {
        answer.framing = "close";
        answer.body = rest;
    }
    return answer;
}

struct CodingRow {
    const char* name;
    const char* protocol;  // "1.1", "1.0" or "h2"
    const char* method;
    std::string target;
    std::string fields;  // request fields, "Name: value\r\n" each
    int status;
    const char* coding;  // Content-Encoding expected ("": none)
    const char* vary;    // Vary expected ("": none)
    const char* framing;  // HTTP/1: "length", "chunked", "close", "none"; h2: "length" or "none"
};

TEST_F(Compression, TableOfCasesEachAnswerObeysTheRulesCachesRelyOn) {
    start({"--workers", "1", "--threads", "1"});
    std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / "stream.so", server_->handlers() / "stream.so");
    ASSERT_TRUE(server_->wait_for_log("loaded stream.so")) << server_->log();
    std::string page;
    for (int i = 0; page.size() < 30000; ++i) page += "<p>row " + std::to_string(i) + " of the page</p>\n";
    std::ofstream(server_->www() / "page.html") << page;
    const std::string c = "/csp/compressible", ae = "Accept-Encoding: ";
    const std::string etag_fields = "If-None-Match: W/\"v1-rows\"\r\n";
    const std::vector<CodingRow> rows = {
        {"gzip", "1.1", "GET", c, ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"br", "1.1", "GET", c, ae + "br\r\n", 200, "br", "Accept-Encoding", "length"},
        {"zstd", "1.1", "GET", c, ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"Chromium's list", "1.1", "GET", c, ae + "gzip, deflate, br, zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"q decides", "1.1", "GET", c, ae + "br;q=1, zstd;q=0.5\r\n", 200, "br", "Accept-Encoding", "length"},
        {"q=0 refuses", "1.1", "GET", c, ae + "gzip;q=0\r\n", 200, "", "Accept-Encoding", "length"},
        {"star", "1.1", "GET", c, ae + "*\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"star q=0", "1.1", "GET", c, ae + "*;q=0\r\n", 200, "", "Accept-Encoding", "length"},
        {"identity;q=0", "1.1", "GET", c, ae + "identity;q=0, gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"identity only", "1.1", "GET", c, ae + "identity\r\n", 200, "", "Accept-Encoding", "length"},
        {"identity preferred", "1.1", "GET", c, ae + "gzip;q=0.5, identity\r\n", 200, "", "Accept-Encoding", "length"},
        {"no Accept-Encoding", "1.1", "GET", c, "", 200, "", "Accept-Encoding", "length"},
        {"unknown coding", "1.1", "GET", c, ae + "deflate\r\n", 200, "", "Accept-Encoding", "length"},
        {"HTTP/1.0 gzip", "1.0", "GET", c, ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"HTTP/1.0 plain", "1.0", "GET", c, "", 200, "", "Accept-Encoding", "length"},
        {"h2 gzip", "h2", "GET", c, ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"h2 br", "h2", "GET", c, ae + "br\r\n", 200, "br", "Accept-Encoding", "length"},
        {"h2 zstd", "h2", "GET", c, ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"h2 plain", "h2", "GET", c, "", 200, "", "Accept-Encoding", "length"},
        {"HEAD", "1.1", "HEAD", c, ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "none"},
        {"h2 HEAD", "h2", "HEAD", c, ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"below the minimum", "1.1", "GET", c + "?size=100", ae + "gzip\r\n", 200, "", "", "length"},
        {"not a listed type", "1.1", "GET", c + "?type=image/png", ae + "gzip\r\n", 200, "", "", "length"},
        {"no-transform", "1.1", "GET", c + "?cc=no-transform", ae + "gzip\r\n", 200, "", "", "length"},
        {"its own coding", "1.1", "GET", c + "?ce=br", ae + "gzip\r\n", 200, "br", "", "length"},
        {"206", "1.1", "GET", c + "?status=206", ae + "gzip\r\n", 206, "", "", "length"},
        {"204", "1.1", "GET", c + "?status=204", ae + "gzip\r\n", 204, "", "", "none"},
        {"404 with a body", "1.1", "GET", c + "?status=404", ae + "gzip\r\n", 404, "gzip", "Accept-Encoding", "length"},
        {"turned off", "1.1", "GET", c + "?off=1", ae + "gzip\r\n", 200, "", "", "length"},
        {"Vary merged", "1.1", "GET", c + "?vary=Cookie", ae + "gzip\r\n", 200, "gzip", "Cookie, Accept-Encoding", "length"},
        {"Vary *", "1.1", "GET", c + "?vary=*", ae + "gzip\r\n", 200, "gzip", "*", "length"},
        {"weak ETag", "1.1", "GET", c + "?etag=1", ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"strong ETag", "1.1", "GET", c + "?etag=1", "", 200, "", "Accept-Encoding", "length"},
        // A 304 says the variant's ETag and Vary, but no Content-Encoding: a cache that holds another
        // variant under the same weak ETag would take it as a relabelling (RFC 9111 §4.3.4).
        {"304 weak", "1.1", "GET", c + "?etag=1", ae + "gzip\r\n" + etag_fields, 304, "", "Accept-Encoding", "none"},
        {"304 strong asked", "1.1", "GET", c + "?etag=1", ae + "gzip\r\nIf-None-Match: \"v1-rows\"\r\n", 304, "",
         "Accept-Encoding", "none"},
        {"two Accept-Encoding lines", "1.1", "GET", c, ae + "*\r\n" + ae + "zstd;q=0\r\n", 200, "br", "Accept-Encoding",
         "length"},
        {"304 plain", "1.1", "GET", c + "?etag=1", "If-None-Match: \"v1-rows\"\r\n", 304, "", "Accept-Encoding", "none"},
        {"cache miss", "1.1", "GET", c + "?cache=60", ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"cache hit", "1.1", "GET", c + "?cache=60", ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
        {"cache hit, gzip", "1.1", "GET", c + "?cache=60", ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "length"},
        {"cache hit, plain", "1.1", "GET", c + "?cache=60", "", 200, "", "Accept-Encoding", "length"},
        {"stream", "1.1", "GET", "/csp/stream/timer?n=5", ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "chunked"},
        {"HTTP/1.0 stream", "1.0", "GET", "/csp/stream/timer?n=5", ae + "gzip\r\n", 200, "gzip", "Accept-Encoding", "close"},
        {"h2 stream", "h2", "GET", "/csp/stream/timer?n=5", ae + "br\r\n", 200, "br", "Accept-Encoding", "none"},
        {"stream HEAD", "1.1", "HEAD", "/csp/stream/timer?n=5", ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "none"},
        {"stream plain", "1.1", "GET", "/csp/stream/timer?n=5", "", 200, "", "Accept-Encoding", "chunked"},
        {"static br", "1.1", "GET", "/page.html", ae + "br\r\n", 200, "br", "Accept-Encoding", "length"},
        {"static Range", "1.1", "GET", "/page.html", ae + "gzip\r\nRange: bytes=0-9\r\n", 206, "", "Accept-Encoding", "length"},
        {"h2 static", "h2", "GET", "/page.html", ae + "zstd\r\n", 200, "zstd", "Accept-Encoding", "length"},
    };
    ASSERT_GE(rows.size(), 40u);
    const auto plain_body = [&](const std::string& target) {
        return coded_exchange(server_->port(), "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", false);
    };
    for (const CodingRow& row : rows) {
        SCOPED_TRACE(row.name);
        CodedAnswer answer;
        const bool head = std::string_view(row.method) == "HEAD";
        if (std::string_view(row.protocol) == "h2") {
            std::string fields, body;
            for (std::size_t at = 0; at < row.fields.size();) {
                const std::size_t end = row.fields.find("\r\n", at);
                fields += " -H '" + row.fields.substr(at, end - at) + "'";
                at = end + 2;
            }
            const auto heads = dir_ / "h2head", out = dir_ / "h2body";
            run_command("curl -s --http2-prior-knowledge" + std::string(head ? " -I" : "") + fields + " -D " +
                        heads.string() + " -o " + out.string() + " 'http://127.0.0.1:" +
                        std::to_string(server_->port()) + row.target + "'");
            std::ifstream in(heads);
            for (std::string line; std::getline(in, line);) {
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.starts_with("HTTP/2 ")) answer.status = std::atoi(line.c_str() + 7);
                const std::size_t colon = line.find(": ");
                if (colon != std::string::npos) answer.fields.emplace(line.substr(0, colon), line.substr(colon + 2));
            }
            std::ifstream body_in(out, std::ios::binary);
            answer.body.assign(std::istreambuf_iterator<char>(body_in), {});
            answer.framing = answer.fields.count("content-length") ? "length" : "none";
            if (head) answer.body.clear();
        } else {
            const std::string version = std::string_view(row.protocol) == "1.0" ? "HTTP/1.0" : "HTTP/1.1";
            answer = coded_exchange(server_->port(),
                                    std::string(row.method) + " " + row.target + " " + version + "\r\nHost: t\r\n" +
                                        row.fields + (version == "HTTP/1.1" ? "Connection: close\r\n" : "") + "\r\n",
                                    head);
        }
        EXPECT_EQ(answer.status, row.status);
        EXPECT_EQ(answer.field("content-encoding"), row.coding);
        EXPECT_EQ(answer.field("vary"), row.vary);
        EXPECT_EQ(answer.framing, row.framing);
        // What a cache relies on (REDbot's checks that concern this): one Content-Encoding and one
        // Vary, never "identity"; a coded answer varies with Accept-Encoding and has no strong
        // ETag; a Content-Length is the bytes sent; a Date.
        EXPECT_LE(answer.fields.count("content-encoding"), 1u);
        EXPECT_LE(answer.fields.count("vary"), 1u);
        EXPECT_NE(answer.field("content-encoding"), "identity");
        const std::string etag = answer.field("etag");
        if (row.status == 304) {
            // The validator of the variant it stands for: weak when that variant is compressed.
            EXPECT_EQ(etag, std::string_view(row.name) == "304 plain" ? "\"v1-rows\"" : "W/\"v1-rows\"");
        } else if (*row.coding && std::string_view(row.name) != "its own coding") {
            EXPECT_TRUE(answer.field("vary") == "*" ||
                        answer.field("vary").find("Accept-Encoding") != std::string::npos);
            if (!etag.empty()) {
                EXPECT_TRUE(etag.starts_with("W/")) << etag;
            }
        } else if (!etag.empty()) {
            EXPECT_FALSE(etag.starts_with("W/")) << etag;  // the handler's own validator, as it set it
        }
        if (answer.framing == "length" && !head) {
            EXPECT_EQ(answer.field("content-length"), std::to_string(answer.body.size()));
        }
        EXPECT_FALSE(answer.field("date").empty());
        // The body decodes to what the same request without Accept-Encoding gets.
        if (!head && answer.status != 304 && answer.status != 204 && std::string_view(row.name) != "its own coding") {
            const std::string plain = plain_body(row.target).body;
            EXPECT_EQ(*row.coding ? decoded(row.coding, answer.body) : answer.body,
                      row.status == 206 && row.target == "/page.html" ? page.substr(0, 10) : plain);
        }
        // A HEAD says what its GET says.
        if (head) {
            const CodedAnswer get_answer = coded_exchange(
                server_->port(), "GET " + row.target + " HTTP/1.1\r\nHost: t\r\n" + row.fields + "Connection: close\r\n\r\n",
                false);
            EXPECT_EQ(answer.field("content-encoding"), get_answer.field("content-encoding"));
            EXPECT_EQ(answer.field("vary"), get_answer.field("vary"));
            if (answer.fields.count("content-length")) {
                EXPECT_EQ(answer.field("content-length"), get_answer.field("content-length"));
            }
        }
    }
    // The cache rows: compressed once per coding (zstd at the miss, gzip at its first hit).
    EXPECT_GE(metric(server_->port(), "cspd_reply_cache_hits_total"), 3);
}

}  // namespace
}  // namespace cspd::test
