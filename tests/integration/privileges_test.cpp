// Started as root: workers and vetting processes run as --user (nobody here), and handlers still
// load, take uploads, compile and log; a hostile handler searches its worker's whole memory and
// the certificates folder for the private key and finds nothing, while its positive control (a
// marker it was sent) is found; the key process, killed, comes back and handshakes resume.
#include "http_client.hpp"
#include "command.hpp"
#include "test_server.hpp"
#include "temp_dir.hpp"

#include "tls/self_signed.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;


std::string hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out;
}

/// "Uid:" of /proc/PID/status: real, effective, saved, filesystem.
std::string uids_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("Uid:")) return line.substr(4);
    return "(gone)";
}

/// The key process: the master's child whose command line says __keys.
pid_t key_process_of(pid_t master) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream cmdline(entry.path() / "cmdline");
        std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
        std::ifstream stat(entry.path() / "stat");
        std::string stat_line;
        std::getline(stat, stat_line);
        const std::size_t close = stat_line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat_line.substr(close + 2));
        std::string state;
        pid_t parent = 0;
        rest >> state >> parent;
        if (parent == master && text.find("__keys") != std::string::npos) return std::stoi(name);
    }
    return -1;
}

class Privileges : public ::testing::Test {
protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root: it is about what cspd gives up when started as root";
        passwd* nobody = ::getpwnam("nobody");
        ASSERT_NE(nobody, nullptr);
        nobody_uid_ = nobody->pw_uid;
    }
    /// A server whose folders nobody may read (its temporary folder is opened up).
    void start(std::vector<std::string> args) {
        server_.emplace(std::move(args), false);
        std::filesystem::permissions(server_->handlers().parent_path(), std::filesystem::perms(0755));
    }
    uid_t nobody_uid_ = 0;
    std::optional<TestServer> server_;
};

TEST_F(Privileges, WorkersAndVettingRunAsTheUserAndHandlersStillLoadUploadCompileAndLog) {
    start({"--user", "nobody", "--workers", "2", "--compile", "--body-memory", "65536"});
    for (const char* name : {"whoami.so", "echo.so"})
        std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / name, server_->handlers() / name);
    std::ofstream(server_->handlers() / "hi.c")
        << "#include <csp/csp.h>\nstatic int hi(const csp_request *r, csp_reply *p) { (void)r; "
           "csp_reply_append(p, \"compiled\", 8); return 200; }\nCSP_HANDLER(hi)\n";
    server_->start();
    const std::string as_nobody = std::to_string(nobody_uid_);
    EXPECT_EQ(uids_of(server_->pid()), "\t0\t0\t0\t0");  // the master keeps root
    for (pid_t worker : server_->worker_pids())
        EXPECT_EQ(uids_of(worker), "\t" + as_nobody + "\t" + as_nobody + "\t" + as_nobody + "\t" + as_nobody);

    const auto who = fetch(server_->port(), "/csp/whoami");
    ASSERT_TRUE(who);
    EXPECT_EQ(who->body, "uid " + as_nobody + " euid " + as_nobody + " gid " +
                             std::to_string(::getpwnam("nobody")->pw_gid) + "\n");
    // init ran in the vetting process and in both workers: as nobody each time, never as root.
    ASSERT_TRUE(server_->wait_for_log("whoami init: uid " + as_nobody)) << server_->log();
    EXPECT_EQ(server_->log().find("whoami init: uid 0 "), std::string::npos);
    EXPECT_TRUE(server_->wait_for_log("whoami call: uid " + as_nobody));

    // An upload larger than --body-memory goes to a temporary file the worker writes as nobody.
    HttpClient client(server_->port());
    const std::string body(300 * 1024, 'b');
    client.send("POST /csp/echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const auto echoed = client.read_response();
    ASSERT_TRUE(echoed);
    EXPECT_EQ(echoed->status, 200);
    EXPECT_NE(echoed->body.find("body-size=" + std::to_string(body.size())), std::string::npos);

    // --compile: the compiler runs as nobody too, and writes where the workers keep versions.
    EXPECT_TRUE(eventually([&] {
        const auto hi = fetch(server_->port(), "/csp/hi");
        return hi && hi->body == "compiled";
    }, 60s)) << server_->log();
}

TEST_F(Privileges, RefusesToStartWhenTheUserCannotReadTheHandlersFolder) {
    server_.emplace(std::vector<std::string>{"--user", "nobody"}, false);  // its folders stay private (0700)
    EXPECT_THROW(server_->start(), std::runtime_error);
    EXPECT_NE(server_->log().find("workers run as nobody, but"), std::string::npos) << server_->log();
}

TEST_F(Privileges, RefusesALogFolderTheWorkersCanWrite) {
    // Handler code runs as nobody: in a folder nobody can write it could put a link where the
    // root master reopens --log-file. Such a folder stops the start, named, with the way out.
    TempDir dir;
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
    for (const char* folder : {"handlers", "www", "logs"}) std::filesystem::create_directories(dir / folder);
    ASSERT_EQ(::chown((dir / "logs").c_str(), nobody_uid_, 0), 0);
    const std::string out = run_command(std::string(CSPD_BINARY) + " --port 0 --bind 127.0.0.1 --user nobody --handlers " +
                                        (dir / "handlers").string() + " --www " + (dir / "www").string() +
                                        " --log-file " + (dir / "logs" / "cspd.log").string() + " 2>&1; echo exit=$?");
    EXPECT_NE(out.find("--log-file's folder " + (dir / "logs").string()), std::string::npos) << out;
    EXPECT_NE(out.find("can be written by nobody"), std::string::npos) << out;
    EXPECT_NE(out.find("exit=1"), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(dir / "logs" / "cspd.log"));
}

TEST_F(Privileges, ALinkPlantedWhereTheLogFileWasIsNotFollowedOnReopen) {
    // After a rotation moved the log away, a link stands at its name: SIGUSR1's reopen refuses
    // it (O_NOFOLLOW), says so in the old file, and the link's target is left alone.
    TempDir dir;
    std::filesystem::create_directories(dir / "logs");
    const auto log_file = dir / "logs" / "cspd.log";
    const auto rotated = dir / "logs" / "cspd.log.1";
    const auto victim = dir / "victim";
    std::ofstream(victim) << "untouched\n";
    TestServer server({"--log-file", log_file.string()});
    std::filesystem::rename(log_file, rotated);
    std::filesystem::create_symlink(victim, log_file);
    ASSERT_EQ(::kill(server.pid(), SIGUSR1), 0);
    const auto rotated_text = [&] {
        std::ifstream in(rotated);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    EXPECT_TRUE(eventually([&] { return rotated_text().find("SIGUSR1: cannot open log file") != std::string::npos; },
                           5s))
        << rotated_text();
    EXPECT_NE(rotated_text().find("logging on to the old file"), std::string::npos);
    EXPECT_EQ(fetch(server.port(), "/-/healthy")->status, 200);  // and it serves on
    std::ifstream in(victim);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), "untouched\n");
    EXPECT_TRUE(std::filesystem::is_symlink(log_file));
}

TEST_F(Privileges, AHostileHandlerFindsNoPrivateKeyInItsWorkerAndCannotOpenTheKeyFiles) {
    TempDir open_dir;
    std::filesystem::permissions(open_dir.path(), std::filesystem::perms(0755));
    const auto certs = open_dir / "certs";
    std::filesystem::create_directories(certs);
    SelfSignedSpec spec;
    spec.alt_names = {"DNS:localhost", "IP:127.0.0.1"};
    const std::string pem = make_self_signed_pem(spec);
    const auto pem_file = certs / "default.pem";
    {
        std::ofstream out(pem_file);
        out << pem;
    }
    ::chmod(pem_file.c_str(), 0600);  // as certbot leaves a key: root's alone

    // The needles: the private scalar both ways round, the key's DER, a line of its PEM text.
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ASSERT_NE(key, nullptr);
    BIGNUM* scalar = nullptr;
    ASSERT_EQ(EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_PRIV_KEY, &scalar), 1);
    std::string big_endian(32, '\0');
    BN_bn2binpad(scalar, reinterpret_cast<unsigned char*>(big_endian.data()), 32);
    BN_free(scalar);
    const std::string little_endian(big_endian.rbegin(), big_endian.rend());
    unsigned char* der = nullptr;
    const int der_size = i2d_PrivateKey(key, &der);
    ASSERT_GT(der_size, 0);
    const std::string der_bytes(reinterpret_cast<char*>(der), static_cast<std::size_t>(der_size));
    OPENSSL_free(der);
    EVP_PKEY_free(key);
    const std::size_t body_at = pem.find('\n', pem.find("PRIVATE KEY-----")) + 1;
    const std::string pem_line = pem.substr(body_at, pem.find('\n', body_at) - body_at);
    std::mt19937_64 random(std::random_device{}());
    std::string marker = "control-marker-";
    for (int i = 0; i < 24; ++i) marker.push_back(static_cast<char>('a' + random() % 26));

    start({"--user", "nobody", "--workers", "1", "--tls-port", "0", "--certs", certs.string()});
    std::filesystem::copy_file(std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / "keyhunter.so",
                               server_->handlers() / "keyhunter.so");
    server_->start();
    const unsigned short tls_port = server_->tls_port();
    // The worker has made handshakes (and so signatures) before it is searched.
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(run_command("curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:" + std::to_string(tls_port) +
                      "/csp/keyhunter"),
                  "200");
    const pid_t keys = key_process_of(server_->pid());
    ASSERT_GT(keys, 0);
    EXPECT_EQ(uids_of(keys), "\t0\t0\t0\t0");

    HttpClient client(server_->port(), 60s);
    client.send("GET /csp/keyhunter HTTP/1.1\r\nHost: x\r\nX-Marker: " + marker + "\r\nX-Needles: " + hex(marker) + "," +
                hex(big_endian) + "," + hex(little_endian) + "," + hex(der_bytes) + "," + hex(pem_line) +
                "\r\nX-Files: " + pem_file.string() + ":/proc/" + std::to_string(keys) + "/mem:/proc/" +
                std::to_string(keys) + "/environ\r\n\r\n");
    const auto report = client.read_response();
    ASSERT_TRUE(report);
    ASSERT_EQ(report->status, 200) << report->body;
    const std::string& found = report->body;
    EXPECT_NE(found.find("needle 0: found"), std::string::npos) << found;  // the search works
    EXPECT_NE(found.find("needle 1: absent"), std::string::npos) << found;
    EXPECT_NE(found.find("needle 2: absent"), std::string::npos) << found;
    EXPECT_NE(found.find("needle 3: absent"), std::string::npos) << found;
    EXPECT_NE(found.find("needle 4: absent"), std::string::npos) << found;
    EXPECT_NE(found.find("file " + pem_file.string() + ": refused"), std::string::npos) << found;
    EXPECT_NE(found.find("/mem: refused"), std::string::npos) << found;
    EXPECT_NE(found.find("/environ: refused"), std::string::npos) << found;
    std::istringstream lines(found);
    int files = 0;
    for (std::string line; std::getline(lines, line);)
        if (line.starts_with("file ")) {
            ++files;
            EXPECT_NE(line.find(": refused"), std::string::npos) << line;
        }
    EXPECT_EQ(files, 3);
    std::cout << found;
}

TEST_F(Privileges, AKeyTheWorkersAccountCanReadAsOwnerOrThroughItsGroupIsRefused) {
    // Not only a key any account can read: one that handler code's own account can, as its
    // owner or through a group it is in (0640 root:nogroup with workers as nobody).
    TempDir open_dir;
    const auto certs = open_dir / "certs";
    std::filesystem::create_directories(certs);
    const auto write_key = [&](const std::string& file, const std::string& name, mode_t mode, uid_t uid, gid_t gid) {
        SelfSignedSpec spec;
        spec.alt_names = {"DNS:" + name};
        std::ofstream(certs / file) << make_self_signed_pem(spec);
        ASSERT_EQ(::chown((certs / file).c_str(), uid, gid), 0);
        ASSERT_EQ(::chmod((certs / file).c_str(), mode), 0);
    };
    write_key("default.pem", "localhost", 0600, 0, 0);
    start({"--user", "nobody", "--workers", "1", "--tls-port", "0", "--certs", certs.string()});
    server_->start();
    const gid_t nobody_gid = ::getpwnam("nobody")->pw_gid;
    write_key("grouped.pem", "grouped.test", 0640, 0, nobody_gid);
    ASSERT_TRUE(server_->wait_for_log("grouped.pem: refused: its private key grouped.pem can be read through its group "
                                      "by nobody, the account handler code runs as (mode 0640): chmod 600 " +
                                      (certs / "grouped.pem").string()))
        << server_->log();
    write_key("owned.pem", "owned.test", 0600, nobody_uid_, 0);
    ASSERT_TRUE(server_->wait_for_log("owned.pem: refused: its private key owned.pem belongs to nobody, the account "
                                      "handler code runs as (mode 0600): chown root " +
                                      (certs / "owned.pem").string()))
        << server_->log();
    // The fix named is enough: a chmod, and the file serves.
    ASSERT_EQ(::chmod((certs / "grouped.pem").c_str(), 0600), 0);
    EXPECT_TRUE(server_->wait_for_log("certificate grouped.pem: serving grouped.test", 10s)) << server_->log();
    EXPECT_EQ(server_->log().find("certificate owned.pem: serving"), std::string::npos);
}

TEST_F(Privileges, AKilledKeyProcessIsStartedAgainAndHandshakesFailFastMeanwhile) {
    TempDir open_dir;
    const auto certs = open_dir / "certs";
    std::filesystem::create_directories(certs);
    SelfSignedSpec spec;
    spec.alt_names = {"DNS:localhost"};
    std::ofstream(certs / "default.pem") << make_self_signed_pem(spec);
    ::chmod((certs / "default.pem").c_str(), 0600);  // a key any account could read is refused
    start({"--user", "nobody", "--workers", "1", "--tls-port", "0", "--certs", certs.string()});
    server_->start();
    const std::string url = "https://127.0.0.1:" + std::to_string(server_->tls_port()) + "/";
    ASSERT_EQ(run_command("curl -sk -o /dev/null -w '%{http_code}' " + url), "404");  // a handshake, then an answer
    const pid_t keys = key_process_of(server_->pid());
    ASSERT_GT(keys, 0);
    ASSERT_EQ(::kill(keys, SIGKILL), 0);
    // While it is down, a full handshake fails rather than hangs.
    const auto began = std::chrono::steady_clock::now();
    run_command("curl -sk --max-time 5 -o /dev/null " + url);
    EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
    ASSERT_TRUE(server_->wait_for_log("key process killed by signal 9; starting it again")) << server_->log();
    EXPECT_TRUE(eventually([&] { return run_command("curl -sk -o /dev/null -w '%{http_code}' " + url) == "404"; }, 5s))
        << server_->log();
    const pid_t again = key_process_of(server_->pid());
    EXPECT_GT(again, 0);
    EXPECT_NE(again, keys);
    // And the log says it is back, not only that it went.
    EXPECT_TRUE(server_->wait_for_log("key process started again as pid " + std::to_string(again)))
        << server_->log();
}

}  // namespace
}  // namespace cspd::test
