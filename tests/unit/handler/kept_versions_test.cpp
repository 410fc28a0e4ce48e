#include "handler/kept_versions.hpp"

#include "handler/loader.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace cspd {
namespace {

class KeptVersionsTest : public ::testing::Test {
protected:
    test::TempDir scratch, server;
    HandlerLoader loader{scratch.path()};
    KeptVersions kept{server.path()};

    /// Loads `file` as `name` and keeps it, as a worker does on install.
    std::shared_ptr<HandlerVersion> load_and_keep(const std::string& name, const std::filesystem::path& file) {
        PreparedVersion prepared;
        EXPECT_EQ(loader.prepare(name, file, file.parent_path(), prepared).error, LoadError::none);
        LoadResult loaded = loader.open(prepared);
        EXPECT_TRUE(loaded.version) << loaded.reason;
        if (loaded.version) kept.keep(*loaded.version, prepared);
        return loaded.version;
    }
};

TEST_F(KeptVersionsTest, AKeptVersionLoadsAgainAfterItsFileIsGone) {
    test::TempDir handlers;
    std::filesystem::copy_file(test::test_handler("v1/versioned.so"), handlers.path() / "versioned.so");
    const auto v1 = load_and_keep("versioned", handlers.path() / "versioned.so");
    ASSERT_TRUE(v1);
    kept.set_serving("versioned", v1.get());
    std::filesystem::remove(handlers.path() / "versioned.so");

    const auto serving = kept.serving("versioned");
    ASSERT_TRUE(serving);
    EXPECT_EQ(serving->content_hash, v1->file().content_hash);
    EXPECT_EQ(serving->size, v1->file().size);
    LoadResult again = loader.load("versioned", serving->library, serving->config_folder);
    ASSERT_TRUE(again.version) << again.reason;
    EXPECT_EQ(again.version->file().content_hash, v1->file().content_hash);
}

TEST_F(KeptVersionsTest, AVersionReadingAConfigurationIsKeptWithIt) {
    test::TempDir handlers;
    std::filesystem::copy_file(test::test_handler("configured.so"), handlers.path() / "configured.so");
    std::ofstream(handlers.path() / "configured.conf") << "greeting = kept\n";
    const auto version = load_and_keep("configured", handlers.path() / "configured.so");
    ASSERT_TRUE(version);
    ASSERT_TRUE(version->reads_config());
    kept.set_good("configured", version.get());
    std::ofstream(handlers.path() / "configured.conf") << "greeting = changed since\n";

    const auto good = kept.good("configured");
    ASSERT_TRUE(good);
    std::ifstream config(good->config_folder / "configured.conf");
    std::string line;
    std::getline(config, line);
    EXPECT_EQ(line, "greeting = kept");
    LoadResult again = loader.load("configured", good->library, good->config_folder);
    ASSERT_TRUE(again.version) << again.reason;
    EXPECT_EQ(again.version->file().content_hash, version->file().content_hash);  // the same version, config and all
}

TEST_F(KeptVersionsTest, RecordsCanBeClearedAndNameNothingUnknown) {
    EXPECT_FALSE(kept.serving("nobody"));
    const auto v1 = load_and_keep("versioned", test::test_handler("v1/versioned.so"));
    ASSERT_TRUE(v1);
    kept.set_good("versioned", v1.get());
    EXPECT_TRUE(KeptVersions::good_in(server.path(), "versioned"));
    kept.set_good("versioned", nullptr);
    EXPECT_FALSE(kept.good("versioned"));
    // A record naming another handler's copy is not believed.
    std::ofstream(server.path() / "other.serving") << "versioned.0000000000000001.5\n";
    EXPECT_FALSE(kept.serving("other"));
}

TEST_F(KeptVersionsTest, TheSweepRemovesOnlyCopiesNoRecordNames) {
    const auto v1 = load_and_keep("versioned", test::test_handler("v1/versioned.so"));
    const auto v2 = load_and_keep("versioned", test::test_handler("v2/versioned.so"));
    ASSERT_TRUE(v1 && v2);
    kept.set_serving("versioned", v2.get());
    EXPECT_EQ(KeptVersions::sweep(server.path(), std::chrono::seconds(3600)), 0u);  // too young to tell
    EXPECT_EQ(KeptVersions::sweep(server.path(), std::chrono::seconds(0)), 1u);     // v1's: nothing names it
    EXPECT_TRUE(kept.serving("versioned"));
}

TEST(KeptVersionsOff, WithoutAFolderNothingIsKept) {
    const KeptVersions kept;
    EXPECT_FALSE(kept.enabled());
    EXPECT_FALSE(kept.serving("versioned"));
}

}  // namespace
}  // namespace cspd
