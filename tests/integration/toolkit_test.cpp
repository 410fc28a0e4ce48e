// The SDK 2.2 toolkit through the real binary: form arguments from the query and the body,
// iteration over arguments and headers, cookies, request ids (and --request-id-header), csp_log
// (tagged, escaped, rate-limited), and the store every worker shares: its operations, expiry, a
// full store, and that it outlives a worker's death.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

class Toolkit : public ::testing::Test {
protected:
    explicit Toolkit(std::vector<std::string> args = {}) : server(std::move(args), false) {
        std::filesystem::copy_file(test_handler("toolkit.so"), server.handlers() / "toolkit.so");
        std::filesystem::copy_file(std::filesystem::path(CSPD_HANDLERS_DIR) / "hello.so", server.handlers() / "hello.so");
        server.start();
    }
    std::optional<HttpResponse> send(const std::string& request) {
        HttpClient client(server.port());
        client.send(request);
        return client.read_response();
    }
    std::optional<HttpResponse> post(const std::string& target, const std::string& type, const std::string& body) {
        return send("POST " + target + " HTTP/1.1\r\nHost: h\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    }
    std::string body(const std::string& target) {
        auto r = fetch(server.port(), target);
        return r ? r->body : "(no answer)";
    }
    TestServer server;
};

TEST_F(Toolkit, FormArgumentNamesAreComparedDecoded) {
    EXPECT_EQ(post("/csp/toolkit/arg?name=user%5Bname%5D", "application/x-www-form-urlencoded", "user%5Bname%5D=Eva")
                  ->body,
              "Eva");
    EXPECT_EQ(body("/csp/toolkit/arg?name=first%20name&first+name=Bo"), "Bo");
}

TEST_F(Toolkit, AConfigurationFileIsNoneOfAnOlderHandlersBusiness) {
    // toolkit.so has no context init: a toolkit.json beside it, even one that does not parse,
    // neither refuses it nor loads it again when it changes.
    std::ofstream(server.handlers() / "toolkit.json") << "{ not json";
    std::ofstream(server.handlers() / "toolkit.json", std::ios::app) << " at all";
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(server.log().find("configuration refused"), std::string::npos) << server.log();
    EXPECT_EQ(server.log().find("toolkit: reloaded"), std::string::npos) << server.log();
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/id")->status, 200);
}

TEST_F(Toolkit, FormArgumentsComeFromTheQueryThenAnUrlencodedBodyDecoded) {
    auto r = post("/csp/toolkit/args?a=1&b=x+y", "application/x-www-form-urlencoded; charset=utf-8",
                  "c=%41%20b&a=2&bad=%zz&&d&%E2%82%AC=euro");
    ASSERT_TRUE(r);
    // In order, repeated names kept, empty pairs skipped, a bad escape left out, names decoded too.
    EXPECT_EQ(r->body, "a=1\nb=x y\nc=A b\na=2\nd=\n\xE2\x82\xAC=euro\n");
    EXPECT_EQ(post("/csp/toolkit/arg?name=a&a=q", "application/x-www-form-urlencoded", "a=body")->body, "q");
    EXPECT_EQ(post("/csp/toolkit/arg?name=c", "application/x-www-form-urlencoded", "c=from+body")->body, "from body");
    EXPECT_EQ(post("/csp/toolkit/arg?name=bad", "application/x-www-form-urlencoded", "bad=%zz")->body, "absent");
    // Another content type's body is not a form.
    EXPECT_EQ(post("/csp/toolkit/args?q=1", "text/plain", "c=3")->body, "q=1\n");
    EXPECT_EQ(post("/csp/toolkit/arg?name=c", "application/json", "c=3")->body, "absent");
}

TEST_F(Toolkit, HeadersAreIteratedInOrderWithRepeatedNames) {
    auto r = send("GET /csp/toolkit/headers HTTP/1.1\r\nHost: h\r\nX-Dup: 1\r\nAccept: */*\r\nX-Dup: 2\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "Host: h\nX-Dup: 1\nAccept: */*\nX-Dup: 2\n");
}

TEST_F(Toolkit, CookiesAreFoundInEveryCookieHeaderWithoutTheirQuotes) {
    const std::string head = "Host: h\r\nCookie: a=1; session=\"abc\";b=2 ; flag\r\nCookie: c=3\r\n\r\n";
    EXPECT_EQ(send("GET /csp/toolkit/cookie?name=session HTTP/1.1\r\n" + head)->body, "abc");
    EXPECT_EQ(send("GET /csp/toolkit/cookie?name=b HTTP/1.1\r\n" + head)->body, "2");
    EXPECT_EQ(send("GET /csp/toolkit/cookie?name=c HTTP/1.1\r\n" + head)->body, "3");
    EXPECT_EQ(send("GET /csp/toolkit/cookie?name=flag HTTP/1.1\r\n" + head)->body, "absent");
    EXPECT_EQ(body("/csp/toolkit/cookie?name=a"), "absent");
}

TEST_F(Toolkit, SetCookieIsBuiltAndRefusedWhenBrowsersWouldMisreadIt) {
    auto r = fetch(server.port(), "/csp/toolkit/set-cookie?name=s&value=v1&same_site=Lax&max_age=60");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("set-cookie"), "s=v1; Path=/; Max-Age=60; HttpOnly; SameSite=Lax");
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/set-cookie?name=s&value=v&same_site=None")->status, 400);
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/set-cookie?name=s&value=v&same_site=None&secure=1")->status, 200);
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/set-cookie?name=s&value=a%3Bb")->status, 400);   // ';' in the value
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/set-cookie?name=a%20b&value=v")->status, 400);   // a space in the name
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/set-cookie?name=s&value=v%0D%0AX:1")->status, 400);
}

TEST_F(Toolkit, RequestIdsAreTheClientsWhenSaneAndMadeOtherwise) {
    EXPECT_EQ(send("GET /csp/toolkit/id HTTP/1.1\r\nHost: h\r\nX-Request-Id: edge-42.a/b\r\n\r\n")->body, "edge-42.a/b");
    const std::regex made("[0-9a-f]{8}-[0-9a-f]+");
    const std::string insane = send("GET /csp/toolkit/id HTTP/1.1\r\nHost: h\r\nX-Request-Id: a b\"c\r\n\r\n")->body;
    EXPECT_TRUE(std::regex_match(insane, made)) << insane;
    const std::string first = body("/csp/toolkit/id"), second = body("/csp/toolkit/id");
    EXPECT_TRUE(std::regex_match(first, made)) << first;
    EXPECT_NE(first, second);
    // Without --request-id-header, responses do not carry it.
    EXPECT_FALSE(fetch(server.port(), "/csp/toolkit/id")->has_header("x-request-id"));
}

class ToolkitWithIdHeader : public Toolkit {
protected:
    ToolkitWithIdHeader() : Toolkit({"--request-id-header"}) {}
};

TEST_F(ToolkitWithIdHeader, EveryResponseSaysItsRequestId) {
    auto r = fetch(server.port(), "/csp/toolkit/id");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("x-request-id"), r->body);
    EXPECT_EQ(send("GET /csp/hello HTTP/1.1\r\nHost: h\r\nX-Request-Id: abc\r\n\r\n")->header("x-request-id"), "abc");
    auto missing = fetch(server.port(), "/csp/nothing-here");
    EXPECT_EQ(missing->status, 404);
    EXPECT_TRUE(std::regex_match(missing->header("x-request-id"), std::regex("[0-9a-f]{8}-[0-9a-f]+")));
    auto file = fetch(server.port(), "/no-such-file");
    EXPECT_TRUE(file->has_header("x-request-id"));
}

TEST_F(Toolkit, LogLinesAreTaggedAndStayOneLine) {
    auto r = send("GET /csp/toolkit/log?text=hello%0Aforged%20line HTTP/1.1\r\nHost: h\r\nX-Request-Id: rq-7\r\n\r\n");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "written 1 dropped 0 refused 0\n");
    ASSERT_TRUE(server.wait_for_log("[rq-7]: hello\\nforged line 0")) << server.log();
    // Tagged with the handler's name and version (the file's size and hash) and the request's id.
    EXPECT_TRUE(std::regex_search(
        server.log(), std::regex(R"(info \[\d+\] handler toolkit\.so#\d+ \(\d+ bytes, fnv [0-9a-f]{16}\) \[rq-7\]: hello)")))
        << server.log();
    EXPECT_EQ(server.log().find("\nforged line"), std::string::npos);  // never a line of its own
    EXPECT_EQ(body("/csp/toolkit/log?level=-3"), "written 0 dropped 0 refused 1\n");
}

class ToolkitSlowLog : public Toolkit {
protected:
    ToolkitSlowLog() : Toolkit({"--handler-log-rate", "5"}) {}
};

TEST_F(ToolkitSlowLog, AHandlerCannotFloodTheLog) {
    // A burst of twice the rate passes; the rest of 200 lines at once is dropped and counted.
    const std::string answer = body("/csp/toolkit/log?n=200&text=flood");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(answer, m, std::regex("written (\\d+) dropped (\\d+) refused 0\n"))) << answer;
    const int written = std::stoi(m[1]), dropped = std::stoi(m[2]);
    EXPECT_GE(written, 10);
    EXPECT_LE(written, 12);
    EXPECT_EQ(written + dropped, 200);
    std::this_thread::sleep_for(400ms);  // two tokens come back
    EXPECT_EQ(body("/csp/toolkit/log?text=after"), "written 1 dropped 0 refused 0\n");
    EXPECT_TRUE(server.wait_for_log(std::to_string(dropped) + " log lines dropped (over --handler-log-rate 5/s)"))
        << server.log();
}

TEST_F(Toolkit, TheStoreGetsPutsAddsAndDeletes) {
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=k"), "rc -1\n");
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=k&value=hello+there"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=k"), "hello there");
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=k&value=second"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=k"), "second");
    EXPECT_EQ(body("/csp/toolkit/kv/add?key=n&delta=5"), "5\n");
    EXPECT_EQ(body("/csp/toolkit/kv/add?key=n&delta=-7"), "-2\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=n"), "-2");
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/kv/add?key=k")->status, 409);  // "second" is no integer
    EXPECT_TRUE(server.wait_for_log("does not hold a decimal int64"));
    EXPECT_EQ(body("/csp/toolkit/kv/del?key=k"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/del?key=k"), "rc -1\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=k"), "rc -1\n");
    const std::string long_key(129, 'x');
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=" + long_key + "&value=v"), "rc -3\n");
}

TEST_F(Toolkit, EntriesExpireAfterTheirTimeToLive) {
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=t&value=soon&ttl=1"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=t"), "soon");
    EXPECT_TRUE(eventually([&] { return body("/csp/toolkit/kv/get?key=t") == "rc -1\n"; }, 3s));
}

TEST_F(Toolkit, TheStoreOutlivesAWorkersDeath) {
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=kept&value=yes"), "rc 0\n");
    const pid_t worker = server.worker_pid();
    ASSERT_GT(worker, 0);
    ::kill(worker, SIGKILL);
    ASSERT_TRUE(eventually([&] { return server.worker_pid() > 0 && server.worker_pid() != worker; }, 5s));
    ASSERT_TRUE(eventually([&] { return body("/csp/toolkit/kv/get?key=kept") == "yes"; }, 5s));
}

class ToolkitSmallStore : public Toolkit {
protected:
    // The whole store to the one handler (--kv-quota 100): this is about a full store.
    ToolkitSmallStore() : Toolkit({"--kv-entries", "2", "--kv-value-max", "16", "--kv-quota", "100"}) {}
};

TEST_F(ToolkitSmallStore, AFullStoreRefusesNewKeysClearly) {
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=a&value=1"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=b&value=2"), "rc 0\n");
    auto full = fetch(server.port(), "/csp/toolkit/kv/put?key=c&value=3");
    EXPECT_EQ(full->status, 507);
    EXPECT_EQ(full->body, "rc -2\n");
    EXPECT_TRUE(server.wait_for_log("the shared store is full (--kv-entries 2): key \"c\" not stored"));
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=a&value=replaced"), "rc 0\n");  // an existing key still changes
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=a&value=" + std::string(17, 'v')), "rc -3\n");
    EXPECT_EQ(body("/csp/toolkit/kv/del?key=b"), "rc 0\n");
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=c&value=3"), "rc 0\n");
}

class ToolkitNoStore : public Toolkit {
protected:
    ToolkitNoStore() : Toolkit({"--kv-entries", "0"}) {}
};

TEST_F(ToolkitNoStore, WithoutAStoreEveryCallSaysUnavailable) {
    EXPECT_EQ(body("/csp/toolkit/kv/put?key=a&value=1"), "rc -5\n");
    EXPECT_EQ(body("/csp/toolkit/kv/get?key=a"), "rc -5\n");
    EXPECT_EQ(fetch(server.port(), "/csp/toolkit/kv/add?key=a")->status, 409);
}

}  // namespace
}  // namespace cspd::test

namespace cspd::test {
namespace {

/// The reply cache: GET and HEAD answered from memory without calling the handler, per path and
/// query, until the entry expires; never for Set-Cookie, nor for Cookie/Authorization requests
/// unless varied on; a new version of the handler forgets its entries; hits and misses counted.
class ReplyCacheTest : public Toolkit {
protected:
    // One event loop: each loop keeps its own entries, and a new connection may land on either.
    ReplyCacheTest() : Toolkit({"--threads", "1"}) {}
    std::string get(const std::string& target, const std::string& headers = "") {
        auto r = send("GET " + target + " HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n");
        return r ? r->body : "(no answer)";
    }
    double metric(const std::string& name) {
        const std::string text = fetch(server.port(), "/metrics")->body;
        std::smatch m;
        if (!std::regex_search(text, m, std::regex("\n" + name + " ([0-9.e+]+)"))) return -1;
        return std::stod(m[1]);
    }
};

TEST_F(ReplyCacheTest, KeepsEachHostsAnswerApart) {
    // A handler that echoes Host and caches must never hand one client's Host to another.
    const auto as_host = [&](const std::string& host) {
        auto r = send("GET /csp/toolkit/cached-host HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
        return r ? r->body : "(no answer)";
    };
    EXPECT_EQ(as_host("evil.example"), "host=evil.example");
    EXPECT_EQ(as_host("good.example"), "host=good.example");
    EXPECT_EQ(as_host("evil.example"), "host=evil.example");
    EXPECT_EQ(as_host("good.example:8080"), "host=good.example:8080");
    EXPECT_EQ(metric("cspd_reply_cache_hits_total"), 1);  // the second evil.example, from memory
}

TEST_F(ReplyCacheTest, AnswersLaterGetsAndHeadsFromMemoryPerPathAndQuery) {
    const std::string kept = "/csp/toolkit/cached?seconds=60&k=1";
    EXPECT_EQ(get(kept), "call 1");
    auto again = send("GET " + kept + " HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->body, "call 1");  // the handler was not called
    EXPECT_EQ(again->header("x-made"), "yes");
    EXPECT_EQ(again->header("content-type"), "text/plain");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60&k=2"), "call 2");  // another query: another entry
    HttpClient client(server.port());
    client.send("HEAD " + kept + " HTTP/1.1\r\nHost: h\r\n\r\n");
    auto head = client.read_response(true);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->header("content-length"), "6");
    EXPECT_TRUE(head->body.empty());
    EXPECT_EQ(post(kept, "text/plain", "x")->body, "call 3");  // a POST always reaches the handler
    EXPECT_EQ(get(kept), "call 1");
    EXPECT_EQ(metric("cspd_reply_cache_hits_total"), 3);
    EXPECT_EQ(metric("cspd_reply_cache_misses_total"), 1);  // k=2; the first call came before any entry
    EXPECT_GT(metric("cspd_reply_cache_bytes"), 0);
}

TEST_F(ReplyCacheTest, EntriesExpire) {
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=1"), "call 1");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=1"), "call 1");
    std::this_thread::sleep_for(1100ms);
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=1"), "call 2");
}

TEST_F(ReplyCacheTest, PersonalRepliesAreNeverSharedByMistake) {
    // Set-Cookie: never kept.
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60&cookie=1"), "call 1");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60&cookie=1"), "call 2");
    // A request with Cookie or Authorization: neither kept nor answered from the cache...
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60", "Cookie: s=alice\r\n"), "call 3");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60", "Authorization: Basic YTpi\r\n"), "call 4");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60"), "call 5");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60", "Cookie: s=alice\r\n"), "call 6");
    // ...unless the handler varies on it: then each cookie has its own entry.
    const std::string varied = "/csp/toolkit/cached?seconds=60&vary=Cookie";
    EXPECT_EQ(get(varied, "Cookie: s=alice\r\n"), "call 7");
    EXPECT_EQ(get(varied, "Cookie: s=bob\r\n"), "call 8");
    EXPECT_EQ(get(varied, "Cookie: s=alice\r\n"), "call 7");
    EXPECT_EQ(get(varied, "Cookie: s=bob\r\n"), "call 8");
    EXPECT_EQ(get(varied), "call 9");
    EXPECT_EQ(get(varied), "call 9");
    // Every Cookie header is part of the key, not the first alone.
    EXPECT_EQ(get(varied, "Cookie: theme=dark\r\nCookie: session=X\r\n"), "call 10");
    EXPECT_EQ(get(varied, "Cookie: theme=dark\r\n"), "call 11");
    EXPECT_EQ(get(varied, "Cookie: theme=dark\r\nCookie: session=X\r\n"), "call 10");
    // 5xx is never kept.
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60&status=503"), "call 12");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60&status=503"), "call 13");
}

TEST_F(ReplyCacheTest, AGetWithABodyCanNeitherPoisonNorReadTheCache) {
    // A form body on a GET is not the handler's arguments, and such a request skips the cache.
    const std::string poison = "GET /csp/toolkit/cached?seconds=60 HTTP/1.1\r\nHost: h\r\nContent-Type: "
                               "application/x-www-form-urlencoded\r\nContent-Length: 10\r\n\r\nstatus=404";
    auto r = send(poison);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);  // the body's status=404 was not read as an argument
    EXPECT_EQ(r->body, "call 1");
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60"), "call 2");  // nothing was kept from it
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60"), "call 2");
    EXPECT_EQ(send("GET /csp/toolkit/arg?name=q HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded"
                   "\r\nContent-Length: 3\r\n\r\nq=1")->body,
              "absent");
}

TEST_F(ReplyCacheTest, AHeadIsAnsweredFromTheCacheButNeverFillsIt) {
    HttpClient client(server.port());
    client.send("HEAD /csp/toolkit/cached?seconds=60 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(client.read_response(true));
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60"), "call 2");  // the HEAD's reply was not kept
    EXPECT_EQ(get("/csp/toolkit/cached?seconds=60"), "call 2");
}

TEST_F(ReplyCacheTest, ANewVersionOfTheHandlerForgetsItsEntries) {
    const std::string kept = "/csp/toolkit/cached?seconds=60";
    EXPECT_EQ(get(kept), "call 1");
    EXPECT_EQ(get(kept), "call 1");
    // The same bytes under a new file: a new version.
    std::filesystem::copy_file(test_handler("toolkit.so"), server.handlers() / "toolkit.so.new");
    std::filesystem::rename(server.handlers() / "toolkit.so.new", server.handlers() / "toolkit.so");
    ASSERT_TRUE(eventually([&] { return get(kept) == "call 2"; }, 5s));
    EXPECT_EQ(get(kept), "call 2");
}

class ReplyCacheOff : public Toolkit {
protected:
    ReplyCacheOff() : Toolkit({"--cache-size", "0", "--threads", "1"}) {}
};

TEST_F(ReplyCacheOff, WithNoCacheEveryRequestCallsTheHandler) {
    EXPECT_EQ(body("/csp/toolkit/cached?seconds=60"), "call 1");
    EXPECT_EQ(body("/csp/toolkit/cached?seconds=60"), "call 2");
}

}  // namespace
}  // namespace cspd::test

namespace cspd::test {
namespace {

/// Bodies over --body-memory go to a temporary file as they arrive and reach every kind of
/// handler mapped from it: one on the loop, one that defers (the body outlives the call), and a
/// blocking one. The worker's own memory does not grow by the body's size.
/// Made before the server, which is told to put its files there.
struct UploadsFolder {
    TempDir uploads;
};

class LargeBodies : protected UploadsFolder, public Toolkit {
protected:
    LargeBodies()
        : Toolkit({"--max-body", std::to_string(256 << 20), "--body-memory", std::to_string(1 << 20), "--upload-dir",
                   uploads.path().string(), "--threads", "1"}) {
        std::filesystem::copy_file(test_handler("toolkit_blocking.so"), server.handlers() / "toolkit_blocking.so");
        EXPECT_TRUE(eventually([&] { return fetch(server.port(), "/csp/toolkit_blocking/id")->status == 200; }, 5s));
    }
    static std::string digest(const std::string& body) {
        std::uint64_t h = 14695981039346656037ull;
        for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
        char text[64];
        std::snprintf(text, sizeof text, "size %zu fnv %016llx", body.size(), static_cast<unsigned long long>(h));
        return text;
    }
    std::optional<HttpResponse> upload(const std::string& target, const std::string& body) {
        HttpClient client(server.port(), 60s);
        client.send("POST " + target + " HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\n"
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
        client.send(body);
        return client.read_response();
    }
    static long rss_anon_kib(pid_t pid) {
        std::ifstream status("/proc/" + std::to_string(pid) + "/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("RssAnon:", 0) == 0) return std::stol(line.substr(8));
        return -1;
    }
};

TEST_F(LargeBodies, ReachLoopDeferredAndBlockingHandlersWithoutGrowingTheWorker) {
    std::string body(64 << 20, '\0');
    for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 2654435761u) >> 13);
    const std::string expected = digest(body);
    const pid_t worker = server.worker_pid();
    ASSERT_EQ(upload("/csp/toolkit/body", "warm-up")->body, digest("warm-up"));
    const long before = rss_anon_kib(worker);
    // Sampled while the bodies arrive: a body held in memory would show, even if freed after.
    std::atomic<bool> done{false};
    std::atomic<long> peak{before};
    std::thread sampler([&] {
        while (!done) {
            peak = std::max(peak.load(), rss_anon_kib(worker));
            std::this_thread::sleep_for(2ms);
        }
    });
    for (const char* target : {"/csp/toolkit/body", "/csp/toolkit/body?defer=1", "/csp/toolkit_blocking/body"}) {
        auto r = upload(target, body);
        EXPECT_TRUE(r) << target;
        EXPECT_EQ(r ? r->status : 0, 200) << target;
        EXPECT_EQ(r ? r->body : "", expected) << target;
    }
    done = true;
    sampler.join();
    const long grown = peak - before;
    EXPECT_LT(grown, 16 * 1024) << "the worker's anonymous memory grew by " << grown << " KiB";
    // The files have no names: nothing is left in the folder, during or after.
    EXPECT_TRUE(std::filesystem::is_empty(uploads.path()));
    // --max-body still bounds them.
    HttpClient client(server.port());
    client.send("POST /csp/toolkit/body HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string((256 << 20) + 1) +
                "\r\n\r\n");
    EXPECT_EQ(client.read_response()->status, 413);
}

class LargeBodiesNowhereToGo : public Toolkit {
protected:
    LargeBodiesNowhereToGo()
        : Toolkit({"--max-body", std::to_string(8 << 20), "--body-memory", "1024", "--upload-dir",
                   "/nonexistent-cspd-uploads"}) {}
};

TEST_F(LargeBodiesNowhereToGo, AnUploadThatCannotBeStoredGets503AndTheReason) {
    HttpClient client(server.port());
    client.send("POST /csp/toolkit/body HTTP/1.1\r\nHost: h\r\nContent-Length: 4096\r\n\r\n" + std::string(4096, 'x'));
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_TRUE(server.wait_for_log("cannot make a temporary file in /nonexistent-cspd-uploads"));
    EXPECT_EQ(body("/csp/toolkit/id").size() > 0, true);  // the server goes on
}

}  // namespace
}  // namespace cspd::test
