// The dashboard (www/) in a real browser: headless chromium driven by playwright-core
// (tests/browser/dashboard.mjs) against the real binary. The page lists hello and xpng, shows a
// handler dropped in, and a broken one with its refusal reason; screenshots are saved in the
// build folder's artifacts/ for people to look at.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

namespace cspd::test {
namespace {

std::string run(const std::string& command, int& status) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
    if (!pipe) return out;
    std::array<char, 4096> chunk;
    while (std::size_t n = std::fread(chunk.data(), 1, chunk.size(), pipe.get())) out.append(chunk.data(), n);
    status = ::pclose(pipe.release());
    return out;
}

TEST(Dashboard, ListsHandlersShowsOneDroppedInAndABrokenOnesReason) {
    TestServer server({"--threads", "1"}, false);
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(CSPD_SOURCE_DIR) / "www"))
        std::filesystem::copy(entry.path(), server.www() / entry.path().filename());
    for (const char* name : {"hello.so", "xpng.so"})
        std::filesystem::copy_file(std::filesystem::path(CSPD_HANDLERS_DIR) / name, server.handlers() / name);
    server.start();
    ASSERT_EQ(fetch(server.port(), "/dashboard.js")->status, 200);

    const std::filesystem::path artifacts = std::filesystem::path(CSPD_BUILD_DIR) / "artifacts";
    std::filesystem::create_directories(artifacts);
    const std::string command = "node " + std::string(CSPD_SOURCE_DIR) + "/tests/browser/dashboard.mjs http://127.0.0.1:" +
                                std::to_string(server.port()) + "/ " + server.handlers().string() + " " +
                                test_handler("counter.so").string() + " " + test_handler("bad_abi.so").string() + " " +
                                (artifacts / "dashboard").string() + " 2>&1";
    int status = -1;
    const std::string out = run(command, status);
    ASSERT_EQ(status, 0) << out;
    const auto result = nlohmann::json::parse(out.substr(out.rfind('{')));
    EXPECT_TRUE(result.at("ok").get<bool>()) << out;
    EXPECT_NE(result.at("broken_reason").get<std::string>().find("built for SDK ABI version 3.0"), std::string::npos)
        << out;
    // The sandbox line: what the kernel enforces here.
    EXPECT_NE(result.at("sandbox").get<std::string>().find("call filter (seccomp); file rules (Landlock ABI"),
              std::string::npos)
        << result.at("sandbox");
    // The protocols line: the 200 requests above were HTTP/1.1; no WebSocket yet.
    EXPECT_NE(result.at("protocols").get<std::string>().find("WebSocket: 0 open of 0 accepted"), std::string::npos)
        << out;
    // The page polls twice a second: a change shows well within a second of the server seeing it.
    std::printf("dropped handler shown after %d ms, broken one after %d ms; screenshots in %s\n",
                result.at("dropped_shown_ms").get<int>(), result.at("broken_shown_ms").get<int>(),
                artifacts.string().c_str());
    EXPECT_TRUE(std::filesystem::exists(artifacts / "dashboard-desktop.png"));
    EXPECT_TRUE(std::filesystem::exists(artifacts / "dashboard-phone.png"));
}

TEST(CompressionInChromium, AJsonAnswerAndAServerSentEventDecodeAsTheyCome) {
    // Chromium offers zstd, br and gzip: a JSON answer comes compressed and decodes whole, and a
    // stream that sends one event and then nothing delivers that event while it stays open.
    TestServer server({"--threads", "1"}, false);
    for (const char* name : {"compressible.so", "stream.so"})
        std::filesystem::copy_file(test_handler(name), server.handlers() / name);
    server.start();
    int status = -1;
    const std::string out = run("node " + std::string(CSPD_SOURCE_DIR) + "/tests/browser/compressed.mjs http://127.0.0.1:" +
                                    std::to_string(server.port()) + " 2>&1",
                                status);
    ASSERT_EQ(status, 0) << out << server.log();
    std::string last = out.substr(0, out.find_last_not_of("\n") + 1);
    last = last.substr(last.rfind('\n') + 1);  // the script's line: its last
    const auto result = nlohmann::json::parse(last);
    EXPECT_TRUE(result.at("ok").get<bool>()) << out;
    std::printf("Chromium got %s: %d bytes on the wire for %d\n", result.at("json_coding").get<std::string>().c_str(),
                result.at("json_encoded_size").get<int>(), result.at("json_decoded_size").get<int>());
}

TEST(Dashboard, LoadsOverHttpsWithHttp2AndListsTheCertificateServing) {
    TempDir certs;
    const auto pem = certs / "default.pem";
    int status = -1;
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + (certs / "k").string() +
            " -out " + (certs / "c").string() +
            " -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>&1 && cat " +
            (certs / "k").string() + " " + (certs / "c").string() + " > " + pem.string() + " && chmod 600 " +
            pem.string() + " && rm " +
            (certs / "k").string() + " " + (certs / "c").string(),
        status);
    ASSERT_EQ(status, 0);
    TestServer server({"--threads", "1", "--tls-port", "0", "--certs", certs.path().string()}, false);
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(CSPD_SOURCE_DIR) / "www"))
        std::filesystem::copy(entry.path(), server.www() / entry.path().filename());
    for (const char* name : {"hello.so", "xpng.so"})
        std::filesystem::copy_file(std::filesystem::path(CSPD_HANDLERS_DIR) / name, server.handlers() / name);
    server.start();
    const std::filesystem::path artifacts = std::filesystem::path(CSPD_BUILD_DIR) / "artifacts";
    std::filesystem::create_directories(artifacts);
    const std::string out = run("node " + std::string(CSPD_SOURCE_DIR) + "/tests/browser/dashboard_https.mjs https://127.0.0.1:" +
                                    std::to_string(server.tls_port()) + "/ default.pem " +
                                    (artifacts / "dashboard-https.png").string() + " 2>&1",
                                status);
    ASSERT_EQ(status, 0) << out;
    const auto result = nlohmann::json::parse(out.substr(out.rfind('{')));
    EXPECT_TRUE(result.at("ok").get<bool>()) << out;
    EXPECT_EQ(result.at("protocol"), "TLS 1.3") << out;
    // ALPN chose h2: the page and everything it fetched came over HTTP/2.
    EXPECT_EQ(result.at("next_hop"), "h2") << out;
    EXPECT_EQ(result.at("resource_hops"), nlohmann::json::array({"h2"})) << out;
    EXPECT_NE(result.at("certificate_row").get<std::string>().find("localhost"), std::string::npos) << out;
}

}  // namespace
}  // namespace cspd::test
