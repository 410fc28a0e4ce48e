// --tls-port over real sockets with real clients: curl, openssl s_client, Python's ssl and
// Node's https get hello and xpng over TLS 1.3 and 1.2, and TLS 1.1 and 1.0 are refused; SNI
// picks the certificate; a certificate rotated by rename serves the next handshake while a
// connection opened before keeps working; a mismatched pair, an expired certificate and a
// truncated file are refused with their reason while the old one serves; plain HTTP to the
// HTTPS port gets a cleartext 400; a stalled handshake and garbage records close without
// costing a worker; --https-redirect answers 308; big files, ranges, streams and pipelined
// requests come through the record layer whole.
#include "http_client.hpp"
#include "command.hpp"
#include "loopback.hpp"
#include "test_server.hpp"

#include "tls/self_signed.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <random>
#include <string>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;

const std::string kClient = std::string(CSPD_TEST_SOURCE_DIR) + "/integration/tls/tls_client.py";


json python_client(unsigned short port, const std::string& args) {
    const std::string out = run_command("python3 -W ignore " + kClient + " " + std::to_string(port) + " " + args);
    try {
        return json::parse(out);
    } catch (const std::exception&) {
        ADD_FAILURE() << "tls_client.py said: " << out;
        return json{{"ok", false}};
    }
}

/// Readable by its owner alone, as a private key must be (a key any account can read is refused).
void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

/// Writes `text` beside `path` and renames it over `path`: one atomic replacement.
void replace_file(const std::filesystem::path& path, const std::string& text) {
    const auto temporary = path.parent_path() / ("." + path.filename().string() + ".tmp");
    write_file(temporary, text);
    std::filesystem::rename(temporary, path);
}

std::string certificate_for(std::vector<std::string> names, std::string cn = "test", long from = -3600,
                            long until = 30L * 86400) {
    SelfSignedSpec spec;
    spec.common_name = std::move(cn);
    spec.alt_names = std::move(names);
    spec.valid_from_s = from;
    spec.valid_until_s = until;
    return make_self_signed_pem(spec);
}

/// The SHA-256 of the certificate in `pem` as openssl prints it ("AB:CD:...").
std::string fingerprint_of(const std::string& pem, const TempDir& dir) {
    const auto file = dir / "fingerprint-input.pem";
    write_file(file, pem);
    std::string out = run_command("openssl x509 -in " + file.string() + " -noout -fingerprint -sha256");
    const std::size_t eq = out.find('=');
    if (eq == std::string::npos) return out;
    out = out.substr(eq + 1);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}


/// Reads until the peer closes or `timeout` passes; what came, and whether it closed.
std::pair<std::string, bool> read_until_close(int fd, std::chrono::milliseconds timeout) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return {got, true};
        got.append(chunk, static_cast<std::size_t>(n));
    }
    return {got, false};
}

class Https : public ::testing::Test {
protected:
    /// Test handlers named in `test_handlers` are in place before the start, so every worker has them
    /// from its first request (a file added later reaches the two workers one after the other).
    void start(std::vector<std::string> more = {}, std::vector<std::string> test_handlers = {}) {
        std::vector<std::string> args = {"--workers", "2", "--tls-port", "0", "--certs", certs().string()};
        args.insert(args.end(), more.begin(), more.end());
        server_.emplace(args, false);
        std::filesystem::copy_file(shipped_handler("hello.so"), server_->handlers() / "hello.so");
        std::filesystem::copy_file(shipped_handler("xpng.so"), server_->handlers() / "xpng.so");
        for (const std::string& name : test_handlers)
            std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / name, server_->handlers() / name);
        server_->start();
        tls_port_ = server_->tls_port();
        ASSERT_NE(tls_port_, 0) << server_->log();
    }
    std::filesystem::path certs() {
        const auto path = dir_ / "certs";
        std::filesystem::create_directories(path);
        return path;
    }
    std::string served_fingerprint(const std::string& sni = "") {
        const json seen = python_client(tls_port_, sni.empty() ? "" : "--sni " + sni);
        return seen.value("sha256", std::string("(no handshake: ") + seen.value("error", "") + ")");
    }

    TempDir dir_;
    std::optional<TestServer> server_;
    unsigned short tls_port_ = 0;
};

TEST_F(Https, CurlOpensslPythonAndNodeGetHelloAndXpngOverTls13And12) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost", "IP:127.0.0.1"}));
    start();
    const std::string url = "https://127.0.0.1:" + std::to_string(tls_port_);
    const std::string png_sha = run_command("curl -s " + url + "/csp/xpng -k | sha256sum | cut -c1-64");
    ASSERT_EQ(png_sha.size(), 65u) << png_sha;
    for (const std::string version : {"1.3", "1.2"}) {
        SCOPED_TRACE("TLS " + version);
        const std::string pin = " --tlsv" + version + " --tls-max " + version;
        EXPECT_EQ(run_command("curl -sk" + pin + " " + url + "/csp/hello"), "<h1>HELLO WORLD</h1>");
        EXPECT_EQ(run_command("curl -sk" + pin + " -o /dev/null -w '%{http_code} %{size_download} %{content_type}' " + url +
                      "/csp/xpng"),
                  "200 70 image/png");

        const std::string flag = version == "1.3" ? "-tls1_3" : "-tls1_2";
        const std::string s_client = run_command("printf 'GET /csp/hello HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' | "
                                         "openssl s_client -quiet -connect 127.0.0.1:" + std::to_string(tls_port_) +
                                         " " + flag + " -servername localhost");
        EXPECT_NE(s_client.find("HTTP/1.1 200 OK"), std::string::npos) << s_client;
        EXPECT_NE(s_client.find("<h1>HELLO WORLD</h1>"), std::string::npos) << s_client;

        const json python = python_client(tls_port_, "--tls " + version + " --path /csp/hello --path /csp/xpng");
        ASSERT_TRUE(python.value("ok", false)) << python.dump();
        EXPECT_EQ(python["version"], "TLSv" + version);
        EXPECT_EQ(python["alpn"], "http/1.1");
        ASSERT_EQ(python["responses"].size(), 2u);  // on one keep-alive connection
        EXPECT_EQ(python["responses"][0]["status"], 200);
        EXPECT_EQ(python["responses"][1]["length"], 70);
        EXPECT_EQ(python["responses"][1]["sha256"].get<std::string>() + "\n", png_sha);

        const std::string node = run_command(
            "node -e \"const https=require('https');https.get({host:'127.0.0.1',port:" + std::to_string(tls_port_) +
            ",path:'/csp/xpng',rejectUnauthorized:false,minVersion:'TLSv" + version + "',maxVersion:'TLSv" + version +
            "'},r=>{const v=r.socket.getProtocol();let n=0;r.on('data',c=>n+=c.length);"
            "r.on('end',()=>console.log(r.statusCode,n,v))}).on('error',e=>console.log('error',e.message))\"");
        EXPECT_EQ(node, "200 70 TLSv" + version + "\n");
    }
}

TEST_F(Https, Tls11And10AreRefused) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start();
    for (const std::string version : {"1.1", "1.0"}) {
        const json seen = python_client(tls_port_, "--tls " + version);
        EXPECT_FALSE(seen.value("ok", true)) << version << ": " << seen.dump();
        const std::string error = seen.value("error", "");
        EXPECT_TRUE(error.find("VERSION") != std::string::npos || error.find("version") != std::string::npos) << error;
    }
    const std::string s_client = run_command("echo | openssl s_client -connect 127.0.0.1:" + std::to_string(tls_port_) +
                                     " -tls1_1 -cipher DEFAULT@SECLEVEL=0");
    EXPECT_NE(s_client.find("alert protocol version"), std::string::npos) << s_client;
    EXPECT_EQ(python_client(tls_port_, "--tls 1.2").value("ok", false), true);  // the worker lives on
}

TEST_F(Https, SniPicksTheCertificateAndTheDefaultAnswersTheRest) {
    const std::string a = certificate_for({"DNS:a.test"}, "a");
    const std::string wild = certificate_for({"DNS:*.b.test"}, "wild");
    const std::string fallback = certificate_for({"DNS:default.test"}, "default");
    write_file(certs() / "a.pem", a);
    write_file(certs() / "b.pem", wild);
    write_file(certs() / "default.pem", fallback);
    start();
    EXPECT_EQ(served_fingerprint("a.test"), fingerprint_of(a, dir_));
    EXPECT_EQ(served_fingerprint("A.TEST"), fingerprint_of(a, dir_));
    EXPECT_EQ(served_fingerprint("x.b.test"), fingerprint_of(wild, dir_));
    EXPECT_EQ(served_fingerprint("x.y.b.test"), fingerprint_of(fallback, dir_));  // one label only
    EXPECT_EQ(served_fingerprint("b.test"), fingerprint_of(fallback, dir_));
    EXPECT_EQ(served_fingerprint("unknown.test"), fingerprint_of(fallback, dir_));
    EXPECT_EQ(served_fingerprint(), fingerprint_of(fallback, dir_));  // no SNI
}

TEST_F(Https, CrtAndKeyPairServesOnceTheyMatch) {
    const std::string first = certificate_for({"DNS:pair.test"}, "first");
    const std::string second = certificate_for({"DNS:pair.test"}, "second");
    // certbot's layout: the chain and the key in two files.
    const auto split = [](const std::string& pem, bool key) {
        const std::size_t cert_at = pem.find("-----BEGIN CERTIFICATE-----");
        return key ? pem.substr(0, cert_at) : pem.substr(cert_at);
    };
    write_file(certs() / "pair.crt", split(first, false));
    write_file(certs() / "pair.key", split(first, true));
    start();
    EXPECT_EQ(served_fingerprint("pair.test"), fingerprint_of(first, dir_));
    // The certificate first: until its key follows, the pair does not match and the old one serves.
    replace_file(certs() / "pair.crt", split(second, false));
    ASSERT_TRUE(server_->wait_for_log("pair.crt+pair.key: refused: the private key does not belong")) << server_->log();
    EXPECT_EQ(served_fingerprint("pair.test"), fingerprint_of(first, dir_));
    replace_file(certs() / "pair.key", split(second, true));
    EXPECT_TRUE(eventually([&] { return served_fingerprint("pair.test") == fingerprint_of(second, dir_); }, 3s));
}

TEST_F(Https, RotatedByRenameServesTheNextHandshakeWhileAnOpenConnectionKeepsWorking) {
    const std::string old_pem = certificate_for({"DNS:site.test"}, "old");
    const std::string new_pem = certificate_for({"DNS:site.test"}, "new");
    write_file(certs() / "site.pem", old_pem);
    start();
    const auto go_on = dir_ / "go-on";
    // A keep-alive connection opened on the old certificate, asking again after the rotation.
    std::string held;
    std::thread holder([&] {
        held = run_command("python3 " + kClient + " " + std::to_string(tls_port_) +
                   " --sni site.test --path /csp/hello --path /csp/xpng --hold " + go_on.string());
    });
    const bool answered_once = eventually([&] { return std::filesystem::exists(go_on.string() + ".ready"); }, 10s);
    if (!answered_once) write_file(go_on, "");  // let it end, then fail
    ASSERT_TRUE(answered_once);
    replace_file(certs() / "site.pem", new_pem);
    const auto rotated = std::chrono::steady_clock::now();
    EXPECT_TRUE(eventually([&] { return served_fingerprint("site.test") == fingerprint_of(new_pem, dir_); }, 3s));
    EXPECT_LT(std::chrono::steady_clock::now() - rotated, 1500ms);  // "within a second", and a client's own time
    write_file(go_on, "");
    holder.join();
    const json old_connection = json::parse(held);
    EXPECT_EQ(old_connection["sha256"], fingerprint_of(old_pem, dir_));
    ASSERT_EQ(old_connection["responses"].size(), 2u);
    EXPECT_EQ(old_connection["responses"][0]["status"], 200);
    EXPECT_EQ(old_connection["responses"][1]["status"], 200) << held;
}

TEST_F(Https, UnusableFilesAreRefusedWithTheirReasonWhileTheOldOneServes) {
    const std::string good = certificate_for({"DNS:site.test"}, "good");
    write_file(certs() / "site.pem", good);
    start();
    const std::string good_print = fingerprint_of(good, dir_);
    ASSERT_EQ(served_fingerprint("site.test"), good_print);

    // A key of another certificate.
    const std::string other = certificate_for({"DNS:site.test"}, "other");
    const std::string mismatched = other.substr(0, other.find("-----BEGIN CERTIFICATE-----")) +
                                   good.substr(good.find("-----BEGIN CERTIFICATE-----"));
    replace_file(certs() / "site.pem", mismatched);
    ASSERT_TRUE(server_->wait_for_log("site.pem: refused: the private key does not belong to the certificate; the "
                                      "previous one keeps serving"))
        << server_->log();
    EXPECT_EQ(served_fingerprint("site.test"), good_print);

    replace_file(certs() / "site.pem", certificate_for({"DNS:site.test"}, "expired", -10 * 86400, -86400));
    ASSERT_TRUE(server_->wait_for_log("site.pem: refused: expired at ")) << server_->log();
    EXPECT_EQ(served_fingerprint("site.test"), good_print);

    replace_file(certs() / "site.pem", certificate_for({"DNS:site.test"}, "future", 86400, 10 * 86400));
    ASSERT_TRUE(server_->wait_for_log("site.pem: refused: not valid before ")) << server_->log();

    const std::string whole = certificate_for({"DNS:site.test"}, "cut");
    replace_file(certs() / "site.pem", whole.substr(0, whole.size() / 2 + 40));
    ASSERT_TRUE(server_->wait_for_log("site.pem: refused: no ")) << server_->log();
    EXPECT_EQ(served_fingerprint("site.test"), good_print);

    replace_file(certs() / "site.pem", certificate_for({}, "nameless"));
    ASSERT_TRUE(server_->wait_for_log("site.pem: refused: no subjectAltName")) << server_->log();
    EXPECT_EQ(served_fingerprint("site.test"), good_print);
}

/// certbot's tree for `name` under `root`: archive/NAME/*1.pem, and live/NAME/*.pem links to them.
void certbot_tree(const std::filesystem::path& root, const std::string& name, const std::string& pem) {
    const std::size_t cert_at = pem.find("-----BEGIN CERTIFICATE-----");
    const auto archive = root / "archive" / name;
    const auto live = root / "live" / name;
    std::filesystem::create_directories(archive);
    std::filesystem::create_directories(live);
    write_file(archive / "privkey1.pem", pem.substr(0, cert_at));
    write_file(archive / "cert1.pem", pem.substr(cert_at));
    write_file(archive / "chain1.pem", "");
    write_file(archive / "fullchain1.pem", pem.substr(cert_at));
    for (const char* file : {"privkey", "cert", "chain", "fullchain"})
        std::filesystem::create_symlink(std::filesystem::path("../../archive") / name / (std::string(file) + "1.pem"),
                                        live / (std::string(file) + ".pem"));
    std::ofstream(root / "live" / "README") << "This directory contains your keys and certificates.\n";
}

TEST_F(Https, CertbotsLiveFolderServesAsCertbotLeavesIt) {
    // --certs pointing at live/: a folder per name, links into ../../archive/ followed.
    const std::string site = certificate_for({"DNS:site.test"}, "site");
    const std::string other = certificate_for({"DNS:other.test"}, "other");
    certbot_tree(dir_.path(), "site.test", site);
    certbot_tree(dir_.path(), "other.test", other);
    std::filesystem::remove(certs());
    std::filesystem::create_directory_symlink(dir_ / "live", dir_ / "certs");
    start();
    EXPECT_EQ(served_fingerprint("site.test"), fingerprint_of(site, dir_)) << server_->log();
    EXPECT_EQ(served_fingerprint("other.test"), fingerprint_of(other, dir_));
    EXPECT_TRUE(server_->wait_for_log("certificate site.test/fullchain.pem+site.test/privkey.pem: serving site.test"))
        << server_->log();
    EXPECT_EQ(server_->log().find("refused"), std::string::npos) << server_->log();
}

TEST_F(Https, CertbotsFolderForOneNameServesToo) {
    // --certs pointing at live/NAME/: its fullchain.pem and privkey.pem; cert.pem and chain.pem
    // beside them are not certificates of their own.
    const std::string site = certificate_for({"DNS:site.test"}, "site");
    certbot_tree(dir_.path(), "site.test", site);
    std::filesystem::remove(certs());
    std::filesystem::create_directory_symlink(dir_ / "live" / "site.test", dir_ / "certs");
    start();
    EXPECT_EQ(served_fingerprint("site.test"), fingerprint_of(site, dir_)) << server_->log();
    EXPECT_TRUE(server_->wait_for_log("certificate fullchain.pem+privkey.pem: serving site.test")) << server_->log();
    EXPECT_EQ(server_->log().find("refused"), std::string::npos) << server_->log();
}

TEST_F(Https, AFolderWithNothingThatCanServeStopsTheStartNamingEachFileAndWhy) {
    // As nginx: HTTPS that could only reset handshakes does not start, and says why file by file.
    TempDir empty;
    const auto start_with = [&](const std::filesystem::path& certs) {
        return run_command("timeout 20 " + std::string(CSPD_BINARY) + " --port 0 --tls-port 0 --workers 1 --certs " +
                           certs.string() + " --handlers " + empty.path().string() + " --www " +
                           empty.path().string() + (::geteuid() == 0 ? " --user root" : "") + " 2>&1; echo exit=$?");
    };
    const std::string nothing = start_with(certs());
    EXPECT_NE(nothing.find("no certificate in " + certs().string() + " can serve: it holds no NAME.pem"),
              std::string::npos) << nothing;
    EXPECT_NE(nothing.find("exit=1"), std::string::npos) << nothing;

    write_file(certs() / "broken.pem", "not a certificate\n");
    const std::string open_pem = certificate_for({"DNS:open.test"}, "open");
    write_file(certs() / "open.pem", open_pem);
    std::filesystem::permissions(certs() / "open.pem", std::filesystem::perms(0644));
    write_file(certs() / "lone.crt", open_pem.substr(open_pem.find("-----BEGIN CERTIFICATE-----")));
    const std::string out = start_with(certs());
    EXPECT_NE(out.find("exit=1"), std::string::npos) << out;
    EXPECT_NE(out.find("no certificate in " + certs().string() + " can serve"), std::string::npos) << out;
    EXPECT_NE(out.find("broken.pem: no certificate found"), std::string::npos) << out;
    EXPECT_NE(out.find("open.pem: its private key open.pem can be read by any account (mode 0644)"), std::string::npos)
        << out;
    EXPECT_NE(out.find("lone.crt: no lone.key beside it"), std::string::npos) << out;
    EXPECT_NE(out.find("--tls-self-signed serves a stand-in"), std::string::npos) << out;
    EXPECT_EQ(out.find("listening"), std::string::npos) << out;
}

TEST_F(Https, AKeyAnyAccountCanReadIsRefusedWithItsModeUntilFixed) {
    // Handler code runs as some account: a key it could read would make the key process pointless.
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start();
    const auto open = certs() / "open.pem";
    const std::string open_pem = certificate_for({"DNS:open.test"}, "open");
    write_file(open, open_pem);
    std::filesystem::permissions(open, std::filesystem::perms(0644));
    ASSERT_TRUE(server_->wait_for_log("open.pem: refused: its private key open.pem can be read by any account (mode "
                                      "0644), handler code included: chmod 600 " + open.string()))
        << server_->log();
    EXPECT_NE(served_fingerprint("open.test"), fingerprint_of(open_pem, dir_));
    // A pair: the key file is judged.
    const std::string pair = certificate_for({"DNS:pair.test"}, "pair");
    const std::size_t cert_at = pair.find("-----BEGIN CERTIFICATE-----");
    write_file(certs() / "pair.crt", pair.substr(cert_at));
    write_file(certs() / "pair.key", pair.substr(0, cert_at));
    std::filesystem::permissions(certs() / "pair.key", std::filesystem::perms(0604));
    ASSERT_TRUE(server_->wait_for_log("pair.crt+pair.key: refused: its private key pair.key can be read by any account "
                                      "(mode 0604)"))
        << server_->log();
    // The fix it names is enough: a chmod, and the file serves.
    std::filesystem::permissions(open, std::filesystem::perms(0600));
    EXPECT_TRUE(eventually([&] { return served_fingerprint("open.test") == fingerprint_of(open_pem, dir_); }, 5s))
        << server_->log();
}

TEST_F(Https, PlainHttpToTheHttpsPortGetsAClearTextBadRequest) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start();
    HttpClient client(tls_port_);
    client.send("GET /csp/hello HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 400);
    EXPECT_NE(response->body.find("HTTPS"), std::string::npos);
    EXPECT_TRUE(client.closed_by_peer());
    EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" + std::to_string(tls_port_) + "/"), "400");
}

TEST_F(Https, StalledHandshakesAndGarbageRecordsCloseWithoutCostingAWorker) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start({"--header-timeout", "1"});
    const std::vector<pid_t> workers = server_->worker_pids();
    // Half a ClientHello, then nothing: closed after --header-timeout (the tick may add a second).
    const int stalled = connect_loopback(tls_port_);
    ASSERT_GE(stalled, 0);
    const unsigned char half_hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
    ASSERT_EQ(::send(stalled, half_hello, sizeof half_hello, MSG_NOSIGNAL), ssize_t(sizeof half_hello));
    const auto began = std::chrono::steady_clock::now();
    EXPECT_TRUE(read_until_close(stalled, 5s).second);
    EXPECT_GE(std::chrono::steady_clock::now() - began, 900ms);
    ::close(stalled);
    // A record header, then noise; and noise from the first byte.
    std::mt19937 random(7);
    for (const bool as_record : {true, false}) {
        const int fd = connect_loopback(tls_port_);
        std::string noise = as_record ? std::string("\x16\x03\x03\x00\x40", 5) : std::string();
        for (int i = 0; i < 64; ++i) noise.push_back(static_cast<char>(random() % 256 | (as_record ? 0 : 0x80)));
        ::send(fd, noise.data(), noise.size(), MSG_NOSIGNAL);
        EXPECT_TRUE(read_until_close(fd, 3s).second);
        ::close(fd);
    }
    EXPECT_TRUE(python_client(tls_port_, "").value("ok", false));
    EXPECT_EQ(server_->worker_pids(), workers);  // nobody died or was replaced
}

TEST_F(Https, RedirectAnswers308ToTheSameUrlOverHttpsExceptTheProbes) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start({"--https-redirect"});
    HttpClient client(server_->port());
    client.send("GET /csp/hello?a=1 HTTP/1.1\r\nHost: example.test:8080\r\n\r\n");
    const auto moved = client.read_response();
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->status, 308);
    EXPECT_EQ(moved->header("location"), "https://example.test:" + std::to_string(tls_port_) + "/csp/hello?a=1");
    client.send("GET /-/healthy HTTP/1.1\r\nHost: example.test\r\n\r\n");
    const auto probe = client.read_response();
    ASSERT_TRUE(probe);
    EXPECT_EQ(probe->status, 200);
    // curl follows it, to the same answer over TLS.
    EXPECT_EQ(run_command("curl -skL http://localhost:" + std::to_string(server_->port()) + "/csp/hello"), "<h1>HELLO WORLD</h1>");
}

TEST_F(Https, BigFilesRangesStreamsAndPipelinedRequestsComeThroughWhole) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start();
    std::string big(3 * 1024 * 1024 + 123, '\0');
    std::mt19937 random(1);
    for (char& c : big) c = static_cast<char>(random());
    write_file(server_->www() / "big.bin", big);
    const std::string url = "https://127.0.0.1:" + std::to_string(tls_port_);
    const std::string expected = run_command("sha256sum " + (server_->www() / "big.bin").string() + " | cut -c1-64");
    // Slowly read (the socket fills, the record layer waits for room), and fast.
    EXPECT_EQ(run_command("curl -sk --limit-rate 2M " + url + "/big.bin | sha256sum | cut -c1-64"), expected);
    EXPECT_EQ(run_command("curl -sk " + url + "/big.bin | sha256sum | cut -c1-64"), expected);
    EXPECT_EQ(run_command("curl -sk -r 1000-1999 " + url + "/big.bin | wc -c"), "1000\n");
    const json ranged = python_client(tls_port_, "--path /big.bin --header 'Range: bytes=-5000'");
    ASSERT_TRUE(ranged.value("ok", false));
    EXPECT_EQ(ranged["responses"][0]["status"], 206);
    EXPECT_EQ(ranged["responses"][0]["length"], 5000);

    // Twenty requests in one write, answered in order on one TLS connection.
    std::string pipelined;
    for (int i = 0; i < 20; ++i) pipelined += "GET /csp/hello HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n";
    pipelined += "GET /csp/xpng HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n";
    const std::string answers = run_command("printf '" + pipelined + "' | openssl s_client -quiet -connect 127.0.0.1:" +
                                    std::to_string(tls_port_) + " 2>/dev/null | grep -c 'HTTP/1.1 200 OK'");
    EXPECT_EQ(answers, "21\n");
}

TEST_F(Https, DeferredStreamedAndUploadedAnswersWorkUnchanged) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start({}, {"stream.so", "later.so", "echo.so"});
    const std::string url = "https://127.0.0.1:" + std::to_string(tls_port_) + "/csp/";
    EXPECT_EQ(run_command("curl -sk -o /dev/null -w '%{http_code}' " + url + "later/timer"), "200");
    EXPECT_EQ(run_command("curl -sk -o /dev/null -w '%{http_code}' " + url + "later/thread"), "200");
    EXPECT_EQ(run_command("curl -sk " + url + "stream/big?mb=4 | wc -c"), std::to_string(4 * 1024 * 1024) + "\n");
    const std::string events = run_command("curl -s http://127.0.0.1:" + std::to_string(server_->port()) + "/csp/stream/sse");
    EXPECT_NE(events.find("data: line two"), std::string::npos) << events;
    EXPECT_EQ(run_command("curl -sk " + url + "stream/sse"), events);
    const auto upload = dir_ / "upload.bin";
    write_file(upload, std::string(900 * 1024, 'u'));
    const std::string echoed = run_command("curl -sk --data-binary @" + upload.string() + " " + url + "echo");
    EXPECT_NE(echoed.find("body-size=" + std::to_string(900 * 1024)), std::string::npos) << echoed.substr(0, 400);
}

TEST_F(Https, SessionsResumeOnEitherWorkerWithTls13And12) {
    write_file(certs() / "default.pem", certificate_for({"DNS:localhost"}));
    start();
    const auto session = dir_ / "session.pem";
    const std::string request = "printf 'GET /csp/hello HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' | ";
    for (const std::string version : {"-tls1_3", "-tls1_2"}) {
        SCOPED_TRACE(version);
        std::filesystem::remove(session);
        // The client stays for the answer: TLS 1.3 tickets come after the handshake.
        const std::string first = run_command(request + "openssl s_client -ign_eof -connect 127.0.0.1:" + std::to_string(tls_port_) +
                                      " " + version + " -sess_out " + session.string());
        ASSERT_NE(first.find("\nNew, "), std::string::npos) << first;
        int reused = 0;
        for (int i = 0; i < 12; ++i) {
            const std::string again = run_command(request + "openssl s_client -ign_eof -connect 127.0.0.1:" +
                                          std::to_string(tls_port_) + " " + version + " -sess_in " + session.string());
            reused += again.find("\nReused, ") != std::string::npos;
        }
        EXPECT_EQ(reused, 12);
    }
    // The kernel spread those connections over both workers' sockets: each resumed some.
    const auto status = nlohmann::json::parse(fetch(server_->port(), "/-/status")->body);
    std::set<std::int64_t> resuming_workers;
    for (const auto& worker : status["workers"])
        if (worker.value("tls_resumed", 0) > 0) resuming_workers.insert(worker["pid"].get<std::int64_t>());
    EXPECT_EQ(resuming_workers.size(), 2u) << status.dump(1);
    EXPECT_EQ(status["tls"]["resumed"], 24);
}

TEST_F(Https, StatusAndMetricsShowCertificatesHandshakesAndFailures) {
    const std::string good = certificate_for({"DNS:site.test", "DNS:*.site.test"}, "site");
    write_file(certs() / "site.pem", good);
    write_file(certs() / "broken.pem", "-----BEGIN CERTIFICATE-----\nnot one\n");
    start({"--header-timeout", "1"});
    ASSERT_TRUE(python_client(tls_port_, "--tls 1.3").value("ok", false));
    ASSERT_TRUE(python_client(tls_port_, "--tls 1.2").value("ok", false));
    EXPECT_FALSE(python_client(tls_port_, "--tls 1.1").value("ok", true));
    EXPECT_EQ(run_command("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:" + std::to_string(tls_port_) + "/"), "400");
    const int stalled = connect_loopback(tls_port_);
    EXPECT_TRUE(read_until_close(stalled, 5s).second);
    ::close(stalled);

    const auto status = nlohmann::json::parse(fetch(server_->port(), "/-/status")->body);
    const auto& tls = status.at("tls");
    EXPECT_EQ(tls["handshakes"]["TLSv1.3"], 1) << tls.dump(1);
    EXPECT_EQ(tls["handshakes"]["TLSv1.2"], 1);
    EXPECT_EQ(tls["failures"]["protocol_version"], 1);
    EXPECT_EQ(tls["failures"]["plain_http"], 1);
    EXPECT_EQ(tls["failures"]["timeout"], 1);
    ASSERT_EQ(tls["certificates"].size(), 2u);
    const auto& broken = tls["certificates"][0];
    EXPECT_EQ(broken["file"], "broken.pem");
    EXPECT_EQ(broken["state"], "refused");
    EXPECT_NE(broken["last_refusal"]["why"].get<std::string>().find("no certificate found"), std::string::npos);
    const auto& site = tls["certificates"][1];
    EXPECT_EQ(site["file"], "site.pem");
    EXPECT_EQ(site["state"], "serving");
    EXPECT_EQ(site["names"], nlohmann::json::array({"site.test", "*.site.test"}));
    EXPECT_EQ(site["sha256"], fingerprint_of(good, dir_));
    const std::int64_t not_after = site["not_after_unix"];
    EXPECT_NEAR(double(not_after), double(std::time(nullptr) + 30L * 86400), 120.0);

    const std::string metrics = fetch(server_->port(), "/metrics")->body;
    EXPECT_NE(metrics.find("cspd_tls_certificate_expiry_timestamp_seconds{file=\"site.pem\"} " + std::to_string(not_after)),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("cspd_tls_certificate_refused{file=\"broken.pem\"} 1"), std::string::npos);
    EXPECT_NE(metrics.find("cspd_tls_handshakes_total{version=\"TLSv1.3\"} 1"), std::string::npos);
    EXPECT_NE(metrics.find("cspd_tls_handshake_failures_total{reason=\"protocol_version\"} 1"), std::string::npos);
    // Prometheus's own parser reads it.
    const auto metrics_file = dir_ / "metrics.txt";
    write_file(metrics_file, metrics);
    EXPECT_EQ(run_command("promtool check metrics < " + metrics_file.string() + " > /dev/null && echo ok"), "ok\n");
}

}  // namespace
}  // namespace cspd::test
