// --compile and --dev: sources dropped into the handlers folder are compiled and served.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

std::string source(const std::string& greeting) {
    return "#include <csp/csp.hpp>\n"
           "static int handle(const csp_request*, csp_reply* out) {\n"
           "    csp::reply reply(out);\n"
           "    reply.content_type(\"text/plain\");\n"
           "    reply << \"" +
           greeting +
           "\";\n"
           "    return 200;\n"
           "}\n"
           "CSP_HANDLER(handle)\n";
}

void write(const std::filesystem::path& file, const std::string& text) {
    // Written beside, then renamed in: an editor's atomic save.
    const auto temporary = file.parent_path() / ("." + file.filename().string() + ".swp");
    std::ofstream(temporary) << text;
    std::filesystem::rename(temporary, file);
}

bool serves(unsigned short port, const std::string& target, int status, const std::string& body_part) {
    return eventually(
        [&] {
            auto r = fetch(port, target);
            return r && r->status == status && r->body.find(body_part) != std::string::npos;
        },
        20s);  // a compiler run, under a sanitizer build too
}

TEST(Compile, CompilesADroppedSourceAndRecompilesOnSave) {
    TestServer server({"--compile"});
    write(server.handlers() / "page.cpp", source("first version"));
    EXPECT_TRUE(serves(server.port(), "/csp/page", 200, "first version"));
    write(server.handlers() / "page.cpp", source("second version"));
    EXPECT_TRUE(serves(server.port(), "/csp/page", 200, "second version"));
    EXPECT_TRUE(server.wait_for_log("handler page: compiling"));
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
}

TEST(Compile, TwoWorkersCompileASourceOnceAndVetTheResultOnce) {
    TestServer server({"--compile", "--workers", "2"});
    // A header beside it: the private copy that is compiled still finds it.
    std::ofstream(server.handlers() / "greeting.h") << "#define GREETING \"compiled once\"\n";
    write(server.handlers() / "page.cpp", "#include \"greeting.h\"\n" + source("\" GREETING \""));
    ASSERT_TRUE(eventually(
        [&] {
            for (int i = 0; i < 6; ++i)
                if (fetch(server.port(), "/csp/page").value_or(HttpResponse{}).body != "compiled once") return false;
            return true;
        },
        20s))
        << server.log();
    ASSERT_TRUE(server.wait_for_log("page.cpp was compiled by another worker", 5s)) << server.log();
    ASSERT_TRUE(server.wait_for_log("passed by another worker's vetting", 5s)) << server.log();
    const std::string log = server.log();
    EXPECT_EQ(count(log, "handler page: compiled page.cpp"), 1u) << log;
    EXPECT_EQ(count(log, "handler page: vetted in"), 1u) << log;
}

TEST(Compile, CompilesCSources) {
    TestServer server({"--compile"});
    write(server.handlers() / "plain.c", "#include <csp/csp.h>\nstatic int h(const csp_request *r, csp_reply *o) { "
                                         "(void)r; csp_reply_puts(o, \"from C\"); "
                                         "return 200; }\nCSP_HANDLER(h)\n");
    EXPECT_TRUE(serves(server.port(), "/csp/plain", 200, "from C"));
}

TEST(Compile, ACompileErrorKeepsTheGoodVersionAndLogsDiagnostics) {
    TestServer server({"--compile"});
    write(server.handlers() / "page.cpp", source("good"));
    ASSERT_TRUE(serves(server.port(), "/csp/page", 200, "good"));
    write(server.handlers() / "page.cpp", "#include <csp/csp.h>\nint broken( {\n");
    EXPECT_TRUE(server.wait_for_log("page.cpp does not compile", 20s));
    EXPECT_TRUE(server.wait_for_log("page.cpp:2:", 1s)) << "file:line:column diagnostics in the log";
    EXPECT_TRUE(server.wait_for_log("keeps serving", 1s));
    auto r = fetch(server.port(), "/csp/page");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "good");  // never the diagnostics without --dev
}

TEST(Compile, DevModeServesTheDiagnosticsUntilTheSourceCompiles) {
    TestServer server({"--compile", "--dev"});
    write(server.handlers() / "page.cpp", "#include <csp/csp.h>\nint broken( {\n");
    EXPECT_TRUE(serves(server.port(), "/csp/page", 500, "page.cpp:2:"));
    auto r = fetch(server.port(), "/csp/page");
    EXPECT_EQ(r->header("content-type"), "text/plain; charset=utf-8");
    write(server.handlers() / "page.cpp", source("fixed"));
    EXPECT_TRUE(serves(server.port(), "/csp/page", 200, "fixed"));
}

TEST(Compile, AMisspeltFunctionIsACompileErrorNotARefusedLoad) {
    // Linked with -z defs, as csp_add_handler links: the linker names the symbol and the line.
    TestServer server({"--compile", "--dev"});
    write(server.handlers() / "typo.c", "#include <csp/csp.h>\nvoid csp_reply_putz(csp_reply *, const char *);\n"
                                        "static int h(const csp_request *r, csp_reply *o) {\n"
                                        "    (void)r; csp_reply_putz(o, \"x\"); return 200; }\nCSP_HANDLER(h)\n");
    EXPECT_TRUE(serves(server.port(), "/csp/typo", 500, "undefined reference to `csp_reply_putz'"));
    EXPECT_TRUE(server.wait_for_log("typo.c does not compile", 1s));
}

TEST(Compile, ALibraryWinsOverASourceOfTheSameName) {
    TestServer server({"--compile"});
    write(server.handlers() / "hello.cpp", source("from the source"));
    ASSERT_TRUE(serves(server.port(), "/csp/hello", 200, "from the source"));
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "hello.so");
    EXPECT_TRUE(serves(server.port(), "/csp/hello", 200, "<h1>HELLO WORLD</h1>"));
    // The source changing now does not matter while hello.so is there...
    write(server.handlers() / "hello.cpp", source("edited source"));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(fetch(server.port(), "/csp/hello")->body, "<h1>HELLO WORLD</h1>");
    // ...and once hello.so goes, the source is what serves.
    std::filesystem::remove(server.handlers() / "hello.so");
    EXPECT_TRUE(serves(server.port(), "/csp/hello", 200, "edited source"));
}

/// A compiler that takes its time: a wrapper script that sleeps, then runs the real one.
std::filesystem::path slow_compiler(const TempDir& dir, int seconds) {
    const auto script = dir / "slow-c++";
    std::ofstream(script) << "#!/bin/sh\nsleep " << seconds << "\nexec c++ \"$@\"\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    return script;
}

TEST(Compile, ALibraryArrivingDuringACompileIsNotOverriddenByIt) {
    TempDir tools;
    ::setenv("CXX", slow_compiler(tools, 2).c_str(), 1);
    TestServer server({"--compile"});
    ::unsetenv("CXX");
    write(server.handlers() / "foo.cpp", source("from the source"));
    ASSERT_TRUE(server.wait_for_log("handler foo: compiling"));  // the compiler is running now
    install_by_rename(shipped_handler("hello.so"), server.handlers() / "foo.so");
    ASSERT_TRUE(serves(server.port(), "/csp/foo", 200, "HELLO WORLD"));
    ASSERT_TRUE(server.wait_for_log("handler foo: the compile of foo.cpp is dropped: foo.so arrived meanwhile", 10s))
        << server.log();
    EXPECT_EQ(fetch(server.port(), "/csp/foo")->body, "<h1>HELLO WORLD</h1>");
}

TEST(Compile, ACompileOverTheTimeLimitIsStoppedWithAllItsProcesses) {
    TempDir tools;
    ::setenv("CXX", slow_compiler(tools, 30).c_str(), 1);
    TestServer server({"--compile", "--compile-timeout", "1"});
    ::unsetenv("CXX");
    write(server.handlers() / "slow.cpp", source("never"));
    EXPECT_TRUE(server.wait_for_log("compilation stopped after 1 s", 10s));
    // The wrapper's `sleep 30` was in the compiler's process group: it is gone too.
    EXPECT_TRUE(eventually([] { return std::system("pgrep -f '^sleep 30$' > /dev/null") != 0; }, 2s));
    EXPECT_EQ(fetch(server.port(), "/csp/slow")->status, 404);
}

TEST(Compile, SourcesAreIgnoredWithoutTheFlag) {
    TestServer server;
    write(server.handlers() / "page.cpp", source("should not be served"));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(fetch(server.port(), "/csp/page")->status, 404);
}

}  // namespace
}  // namespace cspd::test
