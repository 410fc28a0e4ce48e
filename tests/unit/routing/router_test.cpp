#include "http/http1_response.hpp"
#include "routing/router.hpp"

#include "handler/loader.hpp"
#include "routing/static_route.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace cspd {
namespace {

struct Answer {
    int status = 0;
    std::string head, body;
    bool streamed = false;  // the body came from a file handed over, not from the output buffer
};

class RouterTest : public ::testing::Test {
protected:
    RouterTest() {
        std::filesystem::create_directories(www_dir / "docs");
        std::ofstream(www_dir / "index.html") << "<p>home</p>";
        std::ofstream(www_dir / "docs" / "index.html") << "<p>docs</p>";
        std::ofstream(www_dir / "style.css") << "body{}";
        std::ofstream(scratch / "secret.txt") << "top secret";
        std::filesystem::create_symlink(scratch / "secret.txt", www_dir / "escape.txt");
        std::filesystem::create_symlink("../secret.txt", www_dir / "escape-relative.txt");
        std::filesystem::create_symlink("style.css", www_dir / "alias.css");
        for (const char* name : {"echo", "throwing", "status"}) {
            LoadResult r = loader.load(name, test::test_handler(std::string(name) + ".so"));
            EXPECT_TRUE(r.version) << r.reason;
            table.set(name, r.version);
        }
    }

    Answer ask(const std::string& method, const std::string& target, std::string body = "") {
        HttpRequest request;
        request.method = method;
        request.target = target;
        request.body = body;
        request.head = method == "HEAD";
        const HttpHeader headers[] = {{"Host", "h"}, {"X-Test", "present"}};
        request.headers = headers;
        std::string out;
        Http1Writer writer(out, date);
        Routed routed = router.respond(request, RequestContext{ClientInfo{"10.1.2.3", 4000}, true}, writer);
        Answer a;
        a.streamed = routed.body_file.is_open();
        if (a.streamed) {
            EXPECT_TRUE(StaticFiles::read_into(routed.body_file, out));
        }
        a.status = std::stoi(out.substr(9, 3));
        auto end = out.find("\r\n\r\n");
        a.head = out.substr(0, end + 2);
        a.body = out.substr(end + 4);
        return a;
    }

    test::TempDir scratch;
    std::filesystem::path www_dir = scratch / "www";
    HandlerLoader loader{scratch.path()};
    HandlerTable table;
    std::unique_ptr<StaticFiles> www =
        (std::filesystem::create_directories(www_dir), std::make_unique<StaticFiles>(www_dir));
    DateCache date;
    Router router{table, *www};
};

TEST_F(RouterTest, RunsAHandlerWithTheRequestView) {
    Answer a = ask("POST", "/csp/echo?name=Eva%20M&z=1", "the body");
    EXPECT_EQ(a.status, 200);
    EXPECT_NE(a.head.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
    EXPECT_NE(a.head.find("X-Echo: yes\r\n"), std::string::npos);
    EXPECT_EQ(a.body, "method=POST\npath=/csp/echo\npath-info=\nquery=name=Eva%20M&z=1\nname=Eva M\nx-test=present\n"
                      "client=10.1.2.3\nversion=1.1\nbody-size=8\nbody=the body");
}

TEST_F(RouterTest, DecodesThePathBeforeRouting) { EXPECT_EQ(ask("GET", "/csp/%65cho").status, 200); }

TEST_F(RouterTest, AnswersNotFoundForUnknownOrInvalidHandlers) {
    for (const char* target :
         {"/csp/nope", "/csp/", "/csp//echo", "/csp/../csp/echo", "/csp/echo.so", "/csp/e%20cho"})
        EXPECT_EQ(ask("GET", target).status, 404) << target;
}

TEST_F(RouterTest, AHandlerOwnsEverythingBelowItsName) {
    struct Case {
        const char* target;
        const char* path_info;
    };
    for (const Case& c : {Case{"/csp/echo", "path-info=\n"}, Case{"/csp/echo/", "path-info=/\n"},
                          Case{"/csp/echo/users/42", "path-info=/users/42\n"},
                          Case{"/csp/echo/a%20b?name=x", "path-info=/a b\n"}}) {
        const Answer a = ask("GET", c.target);
        EXPECT_EQ(a.status, 200) << c.target;
        EXPECT_NE(a.body.find(c.path_info), std::string::npos) << c.target << ": " << a.body;
    }
    EXPECT_EQ(ask("GET", "/csp/ech%2Fo").status, 404);
}

TEST_F(RouterTest, TurnsAThrowIntoAnInternalError) {
    Answer a = ask("GET", "/csp/throwing");
    EXPECT_EQ(a.status, 500);
    EXPECT_EQ(a.body, "500 Internal Server Error\n");
}

TEST_F(RouterTest, PassesHandlerStatusesThroughAndRefusesInvalidOnes) {
    EXPECT_EQ(ask("GET", "/csp/status?code=302").status, 302);
    EXPECT_NE(ask("GET", "/csp/status?code=302").head.find("Location: /elsewhere\r\n"), std::string::npos);
    EXPECT_EQ(ask("GET", "/csp/status?code=418").status, 418);
    for (const char* bad : {"0", "42", "199", "600", "-1"})
        EXPECT_EQ(ask("GET", std::string("/csp/status?code=") + bad).status, 500) << bad;
}

TEST_F(RouterTest, ServesStaticFilesWithTheirType) {
    Answer index = ask("GET", "/");
    EXPECT_EQ(index.status, 200);
    EXPECT_EQ(index.body, "<p>home</p>");
    EXPECT_NE(index.head.find("Content-Type: text/html; charset=utf-8\r\n"), std::string::npos);
    Answer css = ask("GET", "/style.css");
    EXPECT_EQ(css.body, "body{}");
    EXPECT_NE(css.head.find("Content-Type: text/css"), std::string::npos);
    EXPECT_EQ(ask("GET", "/docs/").body, "<p>docs</p>");
    EXPECT_EQ(ask("GET", "/alias.css").body, "body{}");  // a link that stays inside is fine
}

TEST_F(RouterTest, HandsLargeFilesOverForStreaming) {
    std::string big(kStreamFileBytes + 1, 'x');
    std::ofstream(www_dir / "big.bin") << big;
    Answer a = ask("GET", "/big.bin");
    EXPECT_TRUE(a.streamed);
    EXPECT_NE(a.head.find("Content-Length: " + std::to_string(big.size()) + "\r\n"), std::string::npos) << a.head;
    EXPECT_EQ(a.body, big);
    EXPECT_FALSE(ask("GET", "/style.css").streamed);  // small files go into the output directly
}

TEST_F(RouterTest, HeadGivesTheLengthWithoutTheBody) {
    Answer a = ask("HEAD", "/style.css");
    EXPECT_EQ(a.status, 200);
    EXPECT_NE(a.head.find("Content-Length: 6\r\n"), std::string::npos);
    EXPECT_EQ(a.body, "");
}

TEST_F(RouterTest, RedirectsAFolderToItsSlash) {
    Answer a = ask("GET", "/docs");
    EXPECT_EQ(a.status, 301);
    EXPECT_NE(a.head.find("Location: /docs/\r\n"), std::string::npos);
    // The query goes along, as it came.
    Answer q = ask("GET", "/docs?x=1&y=a%20b");
    EXPECT_EQ(q.status, 301);
    EXPECT_NE(q.head.find("Location: /docs/?x=1&y=a%20b\r\n"), std::string::npos) << q.head;
}

TEST_F(RouterTest, NeverLeavesTheWwwFolder) {
    for (const char* target : {"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/docs/../../secret.txt",
                               "/escape.txt", "/escape-relative.txt", "/..%5csecret.txt", "/./index.html"})
        EXPECT_EQ(ask("GET", target).status, 404) << target;
    for (const char* target : {"/a%00b", "/%zz", "secret.txt", "/a\tb", "*"})
        EXPECT_EQ(ask("GET", target).status, 400) << target;
    // Absolute-form is accepted and resolved like any path: still inside www only.
    EXPECT_EQ(ask("GET", "http://evil/secret.txt").status, 404);
    EXPECT_EQ(ask("GET", "http://evil/../secret.txt").status, 404);
    EXPECT_EQ(ask("GET", "HTTP://example.com/style.css").status, 200);
}

TEST_F(RouterTest, RedirectsOnlyWithinThisSite) {
    Answer a = ask("GET", "//docs");
    EXPECT_EQ(a.status, 301);
    EXPECT_NE(a.head.find("Location: /docs/\r\n"), std::string::npos) << a.head;
}

TEST_F(RouterTest, HandlesAbsoluteFormLikeOriginForm) {
    Answer folder = ask("GET", "http://example.com/docs");
    EXPECT_EQ(folder.status, 301);
    EXPECT_NE(folder.head.find("Location: /docs/\r\n"), std::string::npos) << folder.head;
    EXPECT_EQ(ask("GET", "http://example.com?x=1").body, "<p>home</p>");
    EXPECT_EQ(ask("GET", "http://example.com").body, "<p>home</p>");
    EXPECT_NE(ask("GET", "http://example.com/csp/echo?name=Eva").body.find("name=Eva\n"), std::string::npos);
}

TEST_F(RouterTest, HidesDotFiles) {
    std::ofstream(www_dir / ".env") << "SECRET=1";
    std::filesystem::create_directories(www_dir / ".well-known");
    std::ofstream(www_dir / ".well-known" / "security.txt") << "Contact: x";
    EXPECT_EQ(ask("GET", "/.env").status, 404);
    EXPECT_EQ(ask("GET", "/%2eenv").status, 404);
    EXPECT_EQ(ask("GET", "/.well-known/security.txt").status, 200);
}

TEST_F(RouterTest, RefusesOtherMethodsOnStaticFiles) {
    Answer a = ask("POST", "/style.css");
    EXPECT_EQ(a.status, 405);
    EXPECT_NE(a.head.find("Allow: GET, HEAD\r\n"), std::string::npos);
}

TEST_F(RouterTest, AnswersNotFoundForMissingFiles) {
    EXPECT_EQ(ask("GET", "/missing.html").status, 404);
    EXPECT_EQ(ask("GET", "/docs/missing/").status, 404);
}

}  // namespace
}  // namespace cspd
