// The upload folder is shared by every client: no one body may fill it (each gets a share of the
// free space, refused with 507 before 100 Continue when it is not there), and a client that keeps
// its share by sending a byte now and then is cut (--min-body-rate: 408) so the space comes back.
// The folder is a small tmpfs of its own, as a full disk is what this is about.
#include "http_client.hpp"
#include "temp_dir.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

constexpr std::size_t kPart = 720 * 1024;  // what each upload sends

/// A 4 MiB tmpfs, unmounted at the end.
class SmallFolder {
public:
    SmallFolder() {
        std::filesystem::create_directories(path());
        mounted_ = ::mount("tmpfs", path().c_str(), "tmpfs", 0, "size=4m,mode=0700") == 0;
    }
    ~SmallFolder() {
        if (mounted_) ::umount2(path().c_str(), MNT_DETACH);
    }
    bool mounted() const { return mounted_; }
    std::size_t used() const {
        struct statvfs space {};
        if (::statvfs(path().c_str(), &space) != 0) return 0;
        return std::size_t(space.f_blocks - space.f_bfree) * space.f_frsize;
    }
    std::filesystem::path path() const { return dir_ / "uploads"; }

private:
    TempDir dir_;
    bool mounted_ = false;
};

std::string post_head(std::size_t length, bool expect_continue) {
    return "POST /csp/echo HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(length) + "\r\n" +
           (expect_continue ? "Expect: 100-continue\r\n" : "") + "\r\n";
}

TEST(UploadSpace, DrippingClientsCannotHoldTheUploadFolder) {
    SmallFolder folder;
    if (!folder.mounted()) GTEST_SKIP() << "needs root to mount a small tmpfs (mount: " << std::strerror(errno) << ")";
    TestServer server({"--workers", "1", "--threads", "1", "--upload-dir", folder.path().string(), "--body-memory",
                       "65536", "--max-body", "4194304", "--header-timeout", "2"});
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/echo").value_or(HttpResponse{}).status == 200; },
                           5s));

    // Three clients each send 720 KiB of a body a little larger, then (those still let) a byte a
    // second. Each waits until the folder holds what it sent, so the shares are known: a body may
    // take what is free divided among those being written, itself and one more.
    const std::string part(kPart, 'd');
    std::vector<std::unique_ptr<HttpClient>> drippers;
    for (int i = 0; i < 3; ++i) {
        drippers.push_back(std::make_unique<HttpClient>(server.port(), 1s));
        drippers.back()->send(post_head(kPart + 100, false) + part);
        if (i < 2) {
            ASSERT_TRUE(eventually([&] { return folder.used() >= std::size_t(i + 1) * kPart; }, 5s)) << i;
        }
    }
    // The first two took up to 2 MiB and 1.1 MiB; the third's share (2.6 MiB free among four, about
    // 660 KiB) is too small at once: 507, and its file gone.
    auto third = drippers[2]->read_response();
    ASSERT_TRUE(third);
    EXPECT_EQ(third->status, 507);
    EXPECT_EQ(third->header("connection"), "close");
    EXPECT_TRUE(server.wait_for_log("over its share of the free space"));

    // A legitimate upload meanwhile is told at once, before it sends its body: no 100 Continue.
    {
        HttpClient legit(server.port(), 10s);
        legit.send(post_head(kPart, true));
        auto r = legit.read_response();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 507) << r->raw.substr(0, 200);
        EXPECT_EQ(r->raw.find("100 Continue"), std::string::npos);
    }

    // The two that hold their share drip a byte a second: under --min-body-rate (500 B/s over each
    // 2 s window), so each gets 408 and its share comes back.
    std::vector<int> answered(2, 0);
    for (int second = 0; second < 10 && !(answered[0] && answered[1]); ++second)
        for (int i = 0; i < 2; ++i) {
            if (answered[i]) continue;
            try {
                drippers[i]->send("d");
            } catch (const std::exception&) {
            }
            if (auto r = drippers[i]->read_response()) answered[i] = r->status;  // waits up to a second
        }
    EXPECT_EQ(answered[0], 408) << server.log();
    EXPECT_EQ(answered[1], 408);
    EXPECT_TRUE(server.wait_for_log("slower than --min-body-rate 500 B/s; answered 408"));
    EXPECT_TRUE(eventually([&] { return folder.used() < kPart; }, 5s));

    // Now the same legitimate upload goes through whole.
    HttpClient legit(server.port(), 10s);
    legit.send(post_head(kPart, true));
    ASSERT_EQ(legit.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
    legit.send(part);
    auto r = legit.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("body-size=" + std::to_string(kPart) + "\n"), std::string::npos);
}

TEST(UploadSpace, ABodyThatKeepsPaceIsNotCut) {
    // Slow but steady (about 2 KiB/s, over 500 B/s): served, however long it takes.
    TestServer server({"--workers", "1", "--header-timeout", "1"});
    install_by_rename(test_handler("echo.so"), server.handlers() / "echo.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/echo").value_or(HttpResponse{}).status == 200; },
                           5s));
    HttpClient client(server.port(), 10s);
    client.send(post_head(6000, false));
    for (int i = 0; i < 12; ++i) {
        client.send(std::string(500, 'b'));
        std::this_thread::sleep_for(250ms);
    }
    auto r = client.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("body-size=6000\n"), std::string::npos);
}

}  // namespace
}  // namespace cspd::test
