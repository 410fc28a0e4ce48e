// Streamed replies (SDK 2.1) against the real binary: chunked on HTTP/1.1, close-delimited on
// 1.0, head only for HEAD; written during the call, from a timer, a thread, after a deferral,
// and from a blocking handler; server-sent events framed; answers in request order; a slow
// reader holds memory to the high-water mark; a stream cut short, flooded or left idle closes
// its connection; a client that leaves is reported.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// A server with one worker (so /csp/stream/stats sees every stream) and the stream handlers.
class Streams : public ::testing::Test {
protected:
    explicit Streams(std::vector<std::string> extra = {}) : server(with_one_worker(std::move(extra))) {
        install_by_rename(test_handler("stream.so"), server.handlers() / "stream.so");
        install_by_rename(test_handler("stream_blocking.so"), server.handlers() / "stream_blocking.so");
        EXPECT_TRUE(server.wait_for_log("handler stream: loaded"));
        EXPECT_TRUE(server.wait_for_log("handler stream_blocking: loaded"));
    }
    static std::vector<std::string> with_one_worker(std::vector<std::string> extra) {
        extra.insert(extra.end(), {"--workers", "1"});
        return extra;
    }
    std::string stats() { return fetch(server.port(), "/csp/stream/stats").value_or(HttpResponse{}).body; }
    bool stats_show(const std::string& text) {
        return eventually([&] { return stats().find(text) != std::string::npos; }, 5s);
    }
    /// The worker's resident memory, in KiB.
    long worker_rss_kib() {
        std::ifstream status("/proc/" + std::to_string(server.worker_pid()) + "/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
        return -1;
    }
    TestServer server;
};

::testing::AssertionResult is_pattern(const std::string& body, std::size_t size) {
    if (body.size() != size) return ::testing::AssertionFailure() << body.size() << " bytes, not " << size;
    for (std::size_t i = 0; i < size; ++i)
        if (body[i] != static_cast<char>('a' + i % 26)) return ::testing::AssertionFailure() << "wrong byte at " << i;
    return ::testing::AssertionSuccess();
}

TEST_F(Streams, AreChunkedOnHttp11AndKeepTheConnection) {
    HttpClient client(server.port());
    auto r = client.get("/csp/stream/chunks?n=3");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("transfer-encoding"), "chunked");
    EXPECT_FALSE(r->has_header("content-length"));
    EXPECT_EQ(r->header("content-type"), "text/plain");
    EXPECT_EQ(r->body, "chunk 0\nchunk 1\nchunk 2\n");
    EXPECT_EQ(r->chunks.size(), 3u);
    // What was appended before the stream began is its first bytes; the connection goes on.
    auto prefixed = client.get("/csp/stream/prefix");
    ASSERT_TRUE(prefixed);
    EXPECT_EQ(prefixed->body, "prefix\nbody\n");
    auto created = client.get("/csp/stream/created?n=1");
    ASSERT_TRUE(created);
    EXPECT_EQ(created->status, 201);
    EXPECT_EQ(created->header("x-stream"), "yes");
    EXPECT_EQ(created->body, "chunk 0\n");
}

TEST_F(Streams, AreDelimitedByTheCloseOnHttp10) {
    HttpClient client(server.port());
    client.send(get_line("/csp/stream/chunks?n=2", "HTTP/1.0"));
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("connection"), "close");
    EXPECT_FALSE(r->has_header("transfer-encoding"));
    EXPECT_EQ(r->body, "chunk 0\nchunk 1\n");
}

TEST_F(Streams, SendTheHeadAloneForHead) {
    HttpClient client(server.port());
    client.send("HEAD /csp/stream/chunks?n=5 HTTP/1.1\r\nHost: h\r\n\r\n");
    auto head = client.read_response(true);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->header("transfer-encoding"), "chunked");
    // No stray body bytes: the next answer on the connection parses from its first byte.
    auto next = client.get("/csp/stream/prefix");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "prefix\nbody\n");
}

TEST_F(Streams, ForHeadEndTheExchangeOnceTheHeadIsOutAndTellTheHandler) {
    // A stream that never ends on its own (/forever, or an SSE feed): HEAD gets the head, and the
    // connection goes on at once; the handler hears CSP_ABORT_NO_BODY and its writes fail.
    HttpClient client(server.port(), 5s);
    client.send("HEAD /csp/stream/forever HTTP/1.1\r\nHost: h\r\n\r\n");
    auto head = client.read_response(true);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    auto next = client.get("/csp/stream/prefix");
    ASSERT_TRUE(next) << "the connection jammed behind the HEAD";
    EXPECT_EQ(next->body, "prefix\nbody\n");
    EXPECT_TRUE(stats_show("failed_ends=1 gone=0 timeout=0 draining=0 no_body=1")) << stats();
    // Pipelined behind it, in one write: answered in order.
    client.send("HEAD /csp/stream/forever HTTP/1.1\r\nHost: h\r\n\r\nGET /csp/stream/chunks?n=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(client.read_response(true));
    auto after = client.read_response();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->body, "chunk 0\n");
}

TEST_F(Streams, ForHeadTellAHandlerBuiltBefore23TheReasonItKnows) {
    install_by_rename(test_handler("abi2_2/stream.so"), server.handlers() / "old_stream.so");
    ASSERT_TRUE(server.wait_for_log("handler old_stream: loaded"));
    HttpClient client(server.port(), 5s);
    client.send("HEAD /csp/old_stream/forever HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(client.read_response(true));
    auto next = client.get("/csp/old_stream/prefix");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "prefix\nbody\n");
    EXPECT_TRUE(eventually([&] {
        return fetch(server.port(), "/csp/old_stream/stats").value_or(HttpResponse{}).body.find("gone=1 timeout=0 draining=0 no_body=0") !=
               std::string::npos;
    }, 5s)) << fetch(server.port(), "/csp/old_stream/stats").value_or(HttpResponse{}).body << server.log();
}

TEST_F(Streams, ForHeadTellAHandlerBuiltAgainst23NoBodyOnThisHost) {
    install_by_rename(test_handler("abi2_3/stream.so"), server.handlers() / "stream23.so");
    ASSERT_TRUE(server.wait_for_log("handler stream23: loaded"));
    HttpClient client(server.port(), 5s);
    client.send("HEAD /csp/stream23/forever HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(client.read_response(true));
    auto next = client.get("/csp/stream23/prefix");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "prefix\nbody\n");
    EXPECT_TRUE(eventually([&] {
        return fetch(server.port(), "/csp/stream23/stats").value_or(HttpResponse{}).body.find("gone=0 timeout=0 draining=0 no_body=1") !=
               std::string::npos;
    }, 5s)) << fetch(server.port(), "/csp/stream23/stats").value_or(HttpResponse{}).body << server.log();
}

TEST_F(Streams, AreWrittenFromATimerAThreadAndAfterADeferral) {
    EXPECT_EQ(fetch(server.port(), "/csp/stream/timer?n=3")->body, "tick 3\ntick 2\ntick 1\n");
    std::string lines;
    for (int i = 0; i < 200; ++i) lines += "from a thread " + std::to_string(i) + "\n";
    EXPECT_EQ(fetch(server.port(), "/csp/stream/thread?n=200")->body, lines);
    EXPECT_EQ(fetch(server.port(), "/csp/stream/deferred")->body, "streamed after a deferral\n");
    EXPECT_EQ(fetch(server.port(), "/csp/stream/refused")->body, "refused\n");
}

TEST_F(Streams, FrameServerSentEvents) {
    auto r = fetch(server.port(), "/csp/stream/sse");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("content-type"), "text/event-stream");
    EXPECT_EQ(r->body, "event: greeting\ndata: hello\n\ndata: line one\ndata: line two\n\nevent: bye\ndata: \n\n");
}

TEST_F(Streams, AnswerPipelinedRequestsInOrder) {
    HttpClient client(server.port());
    client.send(get_line("/csp/stream/timer?n=2") + get_line("/csp/stream/chunks?n=1") + get_line("/csp/stream/prefix"));
    EXPECT_EQ(client.read_response().value_or(HttpResponse{}).body, "tick 2\ntick 1\n");
    EXPECT_EQ(client.read_response().value_or(HttpResponse{}).body, "chunk 0\n");
    EXPECT_EQ(client.read_response().value_or(HttpResponse{}).body, "prefix\nbody\n");
}

TEST_F(Streams, CutShortEndWithoutTheLastChunk) {
    HttpClient client(server.port());
    client.send(get_line("/csp/stream/cut"));
    EXPECT_FALSE(client.read_response());  // the close comes where the last chunk would
    EXPECT_NE(client.leftover().find("partial"), std::string::npos) << client.leftover();
    EXPECT_TRUE(server.wait_for_log("cut short"));
}

TEST_F(Streams, TellTheHandlerWhenTheClientLeaves) {
    {
        HttpClient client(server.port());
        client.send(get_line("/csp/stream/forever"));
        ASSERT_FALSE(client.read_until("tick\n").empty());
    }  // closed here
    // The handler heard it (on-abort), and its csp_stream_end then said the client did not see it.
    EXPECT_TRUE(stats_show("failed_ends=1 gone=1")) << stats();
}

TEST_F(Streams, HoldASlowReaderToTheHighWaterMark) {
    constexpr std::size_t kMiB = 1 << 20, kSize = 256 * kMiB;
    for (const std::string handler : {"stream", "stream_blocking"}) {
        SCOPED_TRACE(handler);
        const long before = worker_rss_kib();
        HttpClient client(server.port(), 30s);
        client.send(get_line("/csp/" + handler + "/big?mb=256"));
        ASSERT_TRUE(client.read_head());
        // The loop's handler is told CSP_AGAIN; the blocking one waits. Either way, once the
        // kernel's buffers are full the stream must stop growing while nobody reads.
        if (handler == "stream") {
            ASSERT_TRUE(eventually([&] { return stats().rfind("again=0 ", 0) != 0; }, 5s)) << stats();
        }
        std::this_thread::sleep_for(500ms);  // the kernel's buffers fill; a writer that ignored the mark shows it
        const long held = worker_rss_kib() - before;
        EXPECT_LT(held, 32 * 1024) << "KiB more while 256 MiB wait to be read";
        auto rest = client.read_chunked();
        ASSERT_TRUE(rest);
        EXPECT_TRUE(is_pattern(*rest, kSize));
    }
    EXPECT_TRUE(stats_show("writable=")) << stats();
    EXPECT_EQ(stats().find("writable=0 "), std::string::npos) << stats();
}

TEST_F(Streams, ThatIgnoreBackPressureAreCut) {
    HttpClient client(server.port());
    client.send(get_line("/csp/stream/flood"));
    EXPECT_FALSE(client.read_response());
    EXPECT_TRUE(server.wait_for_log("ignored CSP_AGAIN"));
    EXPECT_TRUE(stats_show("refused=1 failed_ends=1")) << stats();
    EXPECT_EQ(fetch(server.port(), "/csp/stream/chunks?n=1")->body, "chunk 0\n");  // the server carries on
}

TEST_F(Streams, FromABlockingHandlerEndWithTheCall) {
    EXPECT_EQ(fetch(server.port(), "/csp/stream_blocking/end")->body, "partial\n");
    auto big = fetch(server.port(), "/csp/stream_blocking/big?mb=8");
    ASSERT_TRUE(big);
    EXPECT_TRUE(is_pattern(big->body, 8u << 20));
    HttpClient client(server.port());
    client.send(get_line("/csp/stream_blocking/fail"));
    EXPECT_FALSE(client.read_response());  // returned 500 mid-stream: cut short
    EXPECT_NE(client.leftover().find("partial"), std::string::npos);
}

class ShortHandlerTimeout : public Streams {
protected:
    ShortHandlerTimeout() : Streams({"--handler-timeout", "1", "--blocking-threads", "1"}) {}
};

TEST_F(ShortHandlerTimeout, ABlockingStreamWaitingForItsReaderIsNotAStuckCall) {
    HttpClient client(server.port(), 30s);
    client.send(get_line("/csp/stream_blocking/big?mb=256"));
    ASSERT_TRUE(client.read_head());
    // The pool's only thread waits for room well past --handler-timeout: waiting for the client
    // is not running stuck in handler code, so the worker is not replaced under the stream.
    std::this_thread::sleep_for(3s);
    EXPECT_EQ(server.log().find("are stuck"), std::string::npos) << server.log();
    auto body = client.read_chunked();
    ASSERT_TRUE(body);
    EXPECT_TRUE(is_pattern(*body, 256u << 20));
}

class IdleStreams : public Streams {
protected:
    IdleStreams() : Streams({"--pending-timeout", "1"}) {}
};

TEST_F(IdleStreams, AreCutAfterThePendingTimeout) {
    HttpClient client(server.port(), 10s);
    client.send(get_line("/csp/stream/forever"));
    ASSERT_FALSE(client.read_until("tick\n").empty());
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_TRUE(server.wait_for_log("stream wrote nothing within --pending-timeout"));
    EXPECT_TRUE(stats_show("timeout=1")) << stats();
}

}  // namespace
}  // namespace cspd::test
