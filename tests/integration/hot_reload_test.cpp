// Handlers dropped, replaced and deleted while the real server runs.
#include "http_client.hpp"
#include "test_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

std::string body_at(unsigned short port, const std::string& target) {
    auto r = fetch(port, target);
    return r && r->status == 200 ? r->body : "status " + std::to_string(r ? r->status : 0);
}

class HotReloadTest : public ::testing::Test {
protected:
    TestServer server;
    std::filesystem::path versioned() const { return server.handlers() / "versioned.so"; }
    bool serves(const std::string& body, std::chrono::milliseconds within = 1s) {
        return eventually([&] { return body_at(server.port(), "/csp/versioned") == body; }, within);
    }
};

TEST_F(HotReloadTest, ANewFileIsLiveWithinASecond) {
    EXPECT_EQ(fetch(server.port(), "/csp/versioned")->status, 404);
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    EXPECT_TRUE(serves("version 1"));
    EXPECT_TRUE(server.wait_for_log("handler versioned: loaded versioned.so#"));
}

TEST_F(HotReloadTest, ReplacingByRenameServesTheNewCode) {
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    ASSERT_TRUE(serves("version 1"));
    install_by_rename(test_handler("v2/versioned.so"), versioned());
    EXPECT_TRUE(serves("version 2"));
}

TEST_F(HotReloadTest, OverwritingInPlaceServesTheNewCode) {
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    ASSERT_TRUE(serves("version 1"));
    install_in_place(test_handler("v2/versioned.so"), versioned());
    EXPECT_TRUE(serves("version 2"));
}

// Kubernetes mounts a ConfigMap the way its kubelet's atomic writer lays it out: NAME.so is a link
// to "..data/NAME.so", "..data" a link to a timestamped folder; an update writes a new folder and
// renames a new "..data" link over the old one. Nothing named NAME.so changes, yet it must reload.
TEST_F(HotReloadTest, AConfigMapStyleUpdateThroughDotDotDataServesTheNewCode) {
    namespace fs = std::filesystem;
    const auto publish = [&](const std::string& stamp, const fs::path& library) {
        fs::create_directory(server.handlers() / stamp);
        fs::copy_file(library, server.handlers() / stamp / "versioned.so");
        fs::create_directory_symlink(stamp, server.handlers() / "..data_tmp");
        fs::rename(server.handlers() / "..data_tmp", server.handlers() / "..data");
    };
    // The kubelet makes the volume's root world-writable and sticky (drwxrwxrwt): that must pass.
    fs::permissions(server.handlers(), fs::perms::all | fs::perms::sticky_bit);
    publish("..2026_12_01_10_00_00.1", test_handler("v1/versioned.so"));
    fs::create_symlink("..data/versioned.so", versioned());
    ASSERT_TRUE(serves("version 1"));
    publish("..2026_12_01_10_05_00.2", test_handler("v2/versioned.so"));
    fs::remove_all(server.handlers() / "..2026_12_01_10_00_00.1");  // as the kubelet does, after the swap
    EXPECT_TRUE(serves("version 2"));
}

TEST_F(HotReloadTest, DeletingTheFileGives404) {
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    ASSERT_TRUE(serves("version 1"));
    std::filesystem::remove(versioned());
    EXPECT_TRUE(serves("status 404"));
    EXPECT_TRUE(server.wait_for_log("handler versioned: file removed"));
}

TEST_F(HotReloadTest, ABrokenFileIsRefusedAndTheOldVersionKeepsServing) {
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    ASSERT_TRUE(serves("version 1"));
    install_by_rename(test_handler("bad_abi.so"), versioned());
    EXPECT_TRUE(server.wait_for_log("SDK ABI version 3.0"));
    EXPECT_TRUE(server.wait_for_log("keeps serving"));
    EXPECT_EQ(body_at(server.port(), "/csp/versioned"), "version 1");

    std::ofstream(versioned()) << "not a library at all, just text that someone saved here";
    EXPECT_TRUE(server.wait_for_log("not an ELF file"));
    EXPECT_EQ(body_at(server.port(), "/csp/versioned"), "version 1");
}

TEST_F(HotReloadTest, ABrokenNewFileIsRefusedWithAReason) {
    std::filesystem::copy_file(test_handler("no_entry.so"), server.handlers() / "no_entry.so");
    EXPECT_TRUE(server.wait_for_log("handler no_entry: refused"));
    EXPECT_TRUE(server.wait_for_log("no csp_handler symbol"));
    EXPECT_EQ(fetch(server.port(), "/csp/no_entry")->status, 404);
}

TEST_F(HotReloadTest, TwoHundredReplacementsUnderLoadFailNoRequest) {
    install_by_rename(test_handler("v1/versioned.so"), versioned());
    ASSERT_TRUE(serves("version 1"));
    const std::size_t mappings_one_version = server.handler_mappings();
    ASSERT_GT(mappings_one_version, 0u);

    std::atomic<bool> done{false};
    std::atomic<long> ok{0}, failed{0};
    std::string first_failure;
    std::mutex failure_lock;
    auto client_loop = [&](bool keep_alive) {
        std::unique_ptr<HttpClient> client;
        while (!done) {
            std::optional<HttpResponse> r;
            try {
                if (!keep_alive || !client) client = std::make_unique<HttpClient>(server.port());
                r = client->get("/csp/versioned");
            } catch (const std::exception&) {}
            if (r && r->status == 200 && (r->body == "version 1" || r->body == "version 2")) {
                ++ok;
            } else {
                ++failed;
                std::lock_guard lock(failure_lock);
                if (first_failure.empty()) first_failure = r ? r->raw : "no response";
                client.reset();
            }
        }
    };
    std::thread keep_alive_client(client_loop, true);
    std::thread new_connection_client(client_loop, false);

    int reloads = 0;
    for (int i = 0; i < 200; ++i) {
        const bool to_v2 = i % 2 == 0;
        const auto source = test_handler(to_v2 ? "v2/versioned.so" : "v1/versioned.so");
        if (i % 4 < 2)
            install_by_rename(source, versioned());
        else
            install_in_place(source, versioned());
        if (serves(to_v2 ? "version 2" : "version 1", 2s)) ++reloads;
    }
    done = true;
    keep_alive_client.join();
    new_connection_client.join();

    EXPECT_EQ(reloads, 200);
    EXPECT_EQ(failed, 0) << "first failure: " << first_failure;
    EXPECT_GT(ok, 200);
    // Old versions are unloaded once unused: mappings do not pile up. The live version and the one
    // it replaced (kept loaded for a rollback during --quarantine-window) stay.
    EXPECT_TRUE(eventually([&] { return server.handler_mappings() <= 2 * mappings_one_version; }, 2s))
        << server.handler_mappings() << " mappings, one version has " << mappings_one_version;
}

}  // namespace
}  // namespace cspd::test
