// Every SDK example in examples/, served by the real binary: one thing each.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

class ExamplesTest : public ::testing::Test {
protected:
    ExamplesTest() : server({}, false) {
        for (const char* name : {"greet", "visits", "form_echo", "session", "go", "large", "pixel", "longpoll", "order"})
            std::filesystem::copy_file(test_handler(std::string("examples/") + name + ".so"),
                                       server.handlers() / (std::string(name) + ".so"));
        server.start();
    }
    std::optional<HttpResponse> send(const std::string& request) {
        HttpClient client(server.port());
        client.send(request);
        return client.read_response();
    }
    TestServer server;
};

TEST_F(ExamplesTest, GreetReadsAQueryArgument) {
    EXPECT_EQ(fetch(server.port(), "/csp/greet?name=Eva")->body, "Hello, Eva!\n");
    EXPECT_EQ(fetch(server.port(), "/csp/greet?name=Ana+Lu%C3%ADsa")->body, "Hello, Ana Lu\xc3\xadsa!\n");
    EXPECT_EQ(fetch(server.port(), "/csp/greet")->body, "Hello, stranger! Try ?name=Eva\n");
}

TEST_F(ExamplesTest, GreetTakesItsGreetingFromItsConfiguration) {
    // The answer is kept in the reply cache for 10 s...
    EXPECT_EQ(fetch(server.port(), "/csp/greet?name=Bo")->body, "Hello, Bo!\n");
    std::ofstream(server.handlers() / ".greet.conf") << "greeting = Howdy\n";
    std::filesystem::rename(server.handlers() / ".greet.conf", server.handlers() / "greet.conf");
    // ...but a new configuration is a new version, which does not answer with the old one's.
    EXPECT_TRUE(eventually([&] { return fetch(server.port(), "/csp/greet?name=Bo")->body == "Howdy, Bo!\n"; }, 5s));
    EXPECT_TRUE(server.wait_for_log("handler greet: reloaded as"));
}

TEST_F(ExamplesTest, VisitsKeepsStateAcrossRequestsAndConnections) {
    HttpClient client(server.port());
    EXPECT_EQ(client.get("/csp/visits")->body, "visit 1\n");
    EXPECT_EQ(client.get("/csp/visits")->body, "visit 2\n");
    EXPECT_EQ(fetch(server.port(), "/csp/visits")->body, "visit 3\n");
}

// visits keeps its count in the store every worker shares: with two workers and 1,000 requests
// at once, every count from 1 to 1,000 is given exactly once, and both workers gave some.
TEST(VisitsAcrossWorkers, CountsExactlyWithTwoWorkersAndAThousandConcurrentRequests) {
    TestServer server({"--workers", "2"}, false);
    std::filesystem::copy_file(test_handler("examples/visits.so"), server.handlers() / "visits.so");
    server.start();
    // start() returns once every worker has read the handlers folder: both serve visits.
    constexpr int kClients = 1000;
    std::vector<std::unique_ptr<HttpClient>> clients;
    for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<HttpClient>(server.port(), 20s));
    for (auto& client : clients) client->send("GET /csp/visits HTTP/1.1\r\nHost: h\r\n\r\n");
    std::set<long long> counts;
    int answered = 0;
    for (auto& client : clients) {
        auto r = client->read_response();
        if (!r || r->status != 200) continue;
        ++answered;
        counts.insert(std::stoll(r->body.substr(6)));  // "visit N\n"
    }
    EXPECT_EQ(answered, kClients);
    ASSERT_EQ(counts.size(), std::size_t(kClients));  // no count given twice
    EXPECT_EQ(*counts.begin(), 1);
    EXPECT_EQ(*counts.rbegin(), kClients);
    EXPECT_EQ(fetch(server.port(), "/csp/visits")->body, "visit " + std::to_string(kClients + 1) + "\n");
    const auto status = nlohmann::json::parse(fetch(server.port(), "/-/status")->body);
    int serving = 0;
    for (const auto& worker : status.at("workers")) serving += worker.at("requests").get<long long>() > 50;
    EXPECT_EQ(serving, 2) << status.dump(2);
}

TEST_F(ExamplesTest, FormEchoReadsFormsAndJson) {
    auto form = send("POST /csp/form_echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                     "Content-Length: 14\r\n\r\nname=Eva&age=7");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->body, "field: name=Eva\nfield: age=7\nname is Eva\n");
    auto decoded = send("POST /csp/form_echo?from=query HTTP/1.1\r\nHost: h\r\nContent-Type: "
                        "application/x-www-form-urlencoded\r\nContent-Length: 31\r\n\r\nname=Ana+Lu%C3%ADsa&tag=a&tag=b");
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->body, "field: from=query\nfield: name=Ana Lu\xc3\xadsa\nfield: tag=a\nfield: tag=b\n"
                             "name is Ana Lu\xc3\xadsa\n");
    const std::string json = R"({"name":"Eva","tags":[1,2]})";
    auto echoed = send("POST /csp/form_echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(json.size()) + "\r\n\r\n" + json);
    ASSERT_TRUE(echoed);
    EXPECT_EQ(echoed->header("content-type"), "application/json");
    EXPECT_EQ(echoed->body, json);
    EXPECT_EQ(send("POST /csp/form_echo HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx")
                  ->status,
              415);
    auto get = fetch(server.port(), "/csp/form_echo");
    EXPECT_EQ(get->status, 405);
    EXPECT_EQ(get->header("allow"), "POST");
}

TEST_F(ExamplesTest, OrderReadsAJsonBodyWithALibraryAndSaysWhatIsWrong) {
    const auto post = [&](const std::string& body, const std::string& type = "application/json") {
        return send("POST /csp/order HTTP/1.1\r\nHost: h\r\nContent-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    };
    auto ok = post(R"({"items": [{"sku": "tea", "qty": 2, "price": 3.5}, {"sku": "cake", "qty": 1, "price": 4}]})");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    EXPECT_EQ(ok->header("content-type"), "application/json");
    const auto totals = nlohmann::json::parse(ok->body);
    EXPECT_EQ(totals.at("items"), 2);
    EXPECT_EQ(totals.at("quantity"), 3);
    EXPECT_DOUBLE_EQ(totals.at("total").get<double>(), 11.0);
    // Unicode and escapes come through the library, not a hand-rolled scanner.
    auto escaped = post(R"({"items": [{"sku": "th\u00e9 \"vert\"", "qty": 1, "price": 2}]})");
    ASSERT_TRUE(escaped);
    EXPECT_EQ(escaped->status, 200);
    // Each kind of bad input: its status and a reason a client can act on.
    auto broken = post(R"({"items": [)");
    ASSERT_TRUE(broken);
    EXPECT_EQ(broken->status, 400);
    EXPECT_NE(nlohmann::json::parse(broken->body).at("error").get<std::string>().find("not JSON"), std::string::npos);
    auto shape = post(R"({"items": [{"sku": "tea", "qty": "two", "price": 1}]})");
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->status, 422);
    EXPECT_EQ(nlohmann::json::parse(shape->body).at("error"), "items[0].qty must be an integer from 1 to 1000");
    EXPECT_EQ(post(R"([1, 2])")->status, 422);
    // Bytes that are not UTF-8 in a broken body: still a 400 whose reason is valid JSON.
    auto garbage = post("{\"items\": \"\xff\xfe");
    ASSERT_TRUE(garbage);
    EXPECT_EQ(garbage->status, 400);
    EXPECT_TRUE(nlohmann::json::accept(garbage->body)) << garbage->body;
    EXPECT_EQ(post("items=1", "application/x-www-form-urlencoded")->status, 415);
    EXPECT_EQ(fetch(server.port(), "/csp/order")->status, 405);
}

TEST_F(ExamplesTest, SessionReadsHeadersAndSetsACookie) {
    auto first = send("GET /csp/session HTTP/1.1\r\nHost: h\r\nUser-Agent: tester/1\r\n\r\n");
    ASSERT_TRUE(first);
    EXPECT_EQ(first->header("set-cookie"), "visited=yes; Path=/; HttpOnly; SameSite=Lax");
    EXPECT_EQ(first->body, "first visit: cookie set\nyour user agent: tester/1\n");
    auto again = send("GET /csp/session HTTP/1.1\r\nHost: h\r\nCookie: a=b; visited=yes\r\n\r\n");
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->has_header("set-cookie"));
    EXPECT_EQ(again->body, "welcome back\nyour user agent: (none)\n");
}

TEST_F(ExamplesTest, GoRedirectsOnlyToLocalPaths) {
    auto r = fetch(server.port(), "/csp/go?to=/index.html");
    EXPECT_EQ(r->status, 302);
    EXPECT_EQ(r->header("location"), "/index.html");
    EXPECT_EQ(fetch(server.port(), "/csp/go?to=//evil.example")->status, 400);
    EXPECT_EQ(fetch(server.port(), "/csp/go?to=/%5Cevil.example")->status, 400);
    EXPECT_EQ(fetch(server.port(), "/csp/go?to=/a%0d%0aSet-Cookie:%20x")->status, 400);  // no header injection
}

TEST_F(ExamplesTest, LargeSendsOneMebibyte) {
    auto r = fetch(server.port(), "/csp/large");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->body.size(), 1u << 20);
    EXPECT_EQ(r->body.substr(0, 7), "000000 ");
    EXPECT_EQ(r->body.substr((1u << 20) - 64, 7), "016383 ");
}

TEST_F(ExamplesTest, PixelSendsBinaryBytes) {
    auto r = fetch(server.port(), "/csp/pixel?r=255&g=128&b=0");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->header("content-type"), "image/bmp");
    ASSERT_EQ(r->body.size(), 58u);
    EXPECT_EQ(r->body.substr(0, 2), "BM");
    EXPECT_EQ(static_cast<unsigned char>(r->body[54]), 0);    // blue
    EXPECT_EQ(static_cast<unsigned char>(r->body[55]), 128);  // green
    EXPECT_EQ(static_cast<unsigned char>(r->body[56]), 255);  // red
    EXPECT_EQ(static_cast<unsigned char>(r->body[57]), 0);    // padding: NUL inside the body
}

TEST_F(ExamplesTest, LongpollWaitersGetTheNextMessageOrTimeOut) {
    std::vector<std::unique_ptr<HttpClient>> waiters;
    for (int i = 0; i < 5; ++i) {
        waiters.push_back(std::make_unique<HttpClient>(server.port()));
        waiters.back()->send("GET /csp/longpoll/wait HTTP/1.1\r\nHost: h\r\n\r\n");
    }
    // Every waiter is in (five replies owed) before the message goes.
    ASSERT_TRUE(eventually(
        [&] {
            auto m = fetch(server.port(), "/metrics");
            return m && m->body.find("\ncspd_replies_owed 5\n") != std::string::npos;
        },
        std::chrono::seconds(5)));
    auto posted = send("POST /csp/longpoll/post HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello");
    ASSERT_TRUE(posted);
    EXPECT_EQ(posted->body, "delivered to 5\n");
    for (auto& w : waiters) {
        auto r = w->read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "hello");
    }
    HttpClient alone(server.port());
    alone.send("GET /csp/longpoll/wait?timeout=1 HTTP/1.1\r\nHost: h\r\n\r\n");
    auto r = alone.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 204);
}

TEST(Examples, LongpollHearsADrainWarningThenItsClientLeaving) {
    // The abort callback is told twice: the drain's warning, then the loss (csp.hpp keeps the lambda).
    TestServer server({"--drain-timeout", "6"}, false);  // warned at 5 s: time to leave before the end
    std::filesystem::copy_file(test_handler("examples/longpoll.so"), server.handlers() / "longpoll.so");
    server.start();
    auto waiter = std::make_unique<HttpClient>(server.port());
    waiter->send("GET /csp/longpoll/wait?timeout=50 HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_TRUE(eventually(
        [&] {
            auto m = fetch(server.port(), "/metrics");
            return m && m->body.find("\ncspd_replies_owed 1\n") != std::string::npos;
        },
        std::chrono::seconds(5)));
    ::kill(server.pid(), SIGTERM);
    ASSERT_TRUE(server.wait_for_log("drain deadline near", std::chrono::seconds(10)));
    waiter.reset();  // the client leaves after the warning
    EXPECT_EQ(server.stop(), 0);
    EXPECT_EQ(server.log().find("ERROR: AddressSanitizer"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace cspd::test
namespace cspd::test {
namespace {

/// guestbook driven the way a browser drives it: the page sets a session cookie and carries a
/// CSRF token; the form posts multipart/form-data with a file; the redirect leads back to a page
/// showing the message escaped.
class Guestbook : public ::testing::Test {
protected:
    // A small store: the guestbook must live within it however many visitors come.
    Guestbook() : server({"--kv-entries", "30"}, false) {
        std::filesystem::copy_file(test_handler("examples/guestbook.so"), server.handlers() / "guestbook.so");
        server.start();
    }
    std::optional<HttpResponse> send(const std::string& request) {
        HttpClient client(server.port());
        client.send(request);
        return client.read_response();
    }
    std::optional<HttpResponse> get(const std::string& cookie) {
        return send("GET /csp/guestbook HTTP/1.1\r\nHost: h\r\n" + (cookie.empty() ? "" : "Cookie: " + cookie + "\r\n") +
                    "\r\n");
    }
    std::optional<HttpResponse> post(const std::string& cookie, const std::string& type, const std::string& body) {
        return send("POST /csp/guestbook HTTP/1.1\r\nHost: h\r\n" +
                    (cookie.empty() ? "" : "Cookie: " + cookie + "\r\n") + "Content-Type: " + type +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    }
    static std::string multipart(const std::string& csrf, const std::string& name, const std::string& text,
                                 const std::string& file) {
        const std::string b = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
        return "--" + b + "\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf + "\r\n--" + b +
               "\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n" + name + "\r\n--" + b +
               "\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\n" + text + "\r\n--" + b +
               "\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"notes.txt\"\r\n"
               "Content-Type: text/plain\r\n\r\n" + file + "\r\n--" + b + "--\r\n";
    }
    static constexpr const char* kType = "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW";
    /// The session cookie ("gb_session=...") and the page's CSRF token.
    std::pair<std::string, std::string> visit() {
        auto page = get("");
        EXPECT_TRUE(page && page->status == 200);
        std::smatch cookie, token;
        const std::string set_cookie = page ? page->header("set-cookie") : "", body = page ? page->body : "";
        EXPECT_TRUE(std::regex_match(set_cookie, cookie,
                                     std::regex("gb_session=([0-9a-f]{32}); Path=/csp/guestbook; Max-Age=3600; "
                                                "HttpOnly; SameSite=Lax")))
            << set_cookie;
        EXPECT_TRUE(std::regex_search(body, token, std::regex("name=\"csrf\" value=\"([0-9a-f]{32})\""))) << body;
        return {"gb_session=" + cookie[1].str(), token[1].str()};
    }
    TestServer server;
};

TEST_F(Guestbook, ABrowserSignsItWithAFileAndSeesItsMessageEscaped) {
    const auto [cookie, csrf] = visit();
    const std::string file = "line one\r\n------WebKitFormBoundary7MA4YWxkTrZu0g not quite\r\n";
    auto signed_in = post(cookie, kType, multipart(csrf, "<Eva>", "hi & <script>alert(1)</script>", file));
    ASSERT_TRUE(signed_in);
    EXPECT_EQ(signed_in->status, 303) << signed_in->body;
    EXPECT_EQ(signed_in->header("location"), "/csp/guestbook");
    auto page = get(cookie);
    ASSERT_TRUE(page);
    EXPECT_FALSE(page->has_header("set-cookie"));  // the session goes on
    EXPECT_NE(page->body.find("<li><b>&lt;Eva&gt;</b>: hi &amp; &lt;script&gt;alert(1)&lt;/script&gt; <i>(attached "
                              "notes.txt, " + std::to_string(file.size()) + " bytes)</i></li>"),
              std::string::npos)
        << page->body;
    EXPECT_EQ(page->body.find("<script>"), std::string::npos);
    // An urlencoded form signs too, and the newest message comes first.
    EXPECT_EQ(post(cookie, "application/x-www-form-urlencoded", "csrf=" + csrf + "&name=Bo&text=second+one")->status,
              303);
    const std::string both = get(cookie)->body;
    EXPECT_LT(both.find("<b>Bo</b>: second one"), both.find("<b>&lt;Eva&gt;</b>"));
}

TEST_F(Guestbook, VisitorsWriteNothingIntoTheStoreUntilTheySign) {
    for (int i = 0; i < 100; ++i) ASSERT_EQ(get("")->status, 200) << i;  // each a new visitor
    const auto [cookie, csrf] = visit();
    EXPECT_EQ(post(cookie, "application/x-www-form-urlencoded", "csrf=" + csrf + "&name=Eva&text=still+room")->status,
              303);
    EXPECT_NE(get(cookie)->body.find("<b>Eva</b>: still room"), std::string::npos);
}

TEST_F(Guestbook, AFormWithoutItsSessionsTokenIsRefused) {
    const auto [cookie, csrf] = visit();
    const auto [other_cookie, other_csrf] = visit();
    EXPECT_EQ(post(cookie, kType, multipart("", "Eva", "hi", ""))->status, 403);           // no token
    EXPECT_EQ(post("", kType, multipart(csrf, "Eva", "hi", ""))->status, 403);             // no session
    EXPECT_EQ(post(cookie, kType, multipart(other_csrf, "Eva", "hi", ""))->status, 403);   // another session's
    EXPECT_EQ(post(cookie, kType, multipart(csrf, "", "hi", ""))->status, 400);            // no name
    EXPECT_EQ(post(cookie, kType, "--x\r\nbroken")->status, 400);                          // malformed
    EXPECT_EQ(get(cookie)->body.find("<li>"), std::string::npos);                          // nothing was signed
}

}  // namespace
}  // namespace cspd::test
