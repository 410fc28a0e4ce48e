#include "handler/loader.hpp"

#include "handler/sdk_bridge.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace cspd {
namespace {

/// Runs a loaded handler on a GET of its own path; returns the body.
std::string call(const HandlerVersion& version) {
    const std::string target = "/csp/" + version.name();
    HttpRequest request;
    request.method = "GET";
    request.target = target;
    HandlerRequestView view;
    view.bind(request, {target, "", "", "127.0.0.1", 1, version.state(), &version, {}}, version.abi());
    HandlerReply reply;
    reply.reset(version.abi());
    EXPECT_EQ(version.handle(view.raw(), view.raw_v1(), reply.raw()), 200);
    return std::string(reply.body());
}

class HandlerLoaderTest : public ::testing::Test {
protected:
    test::TempDir scratch;
    HandlerLoader loader{scratch.path()};
};

TEST_F(HandlerLoaderTest, LoadsAHandlerAndCallsIt) {
    LoadResult r = loader.load("versioned", test::test_handler("v1/versioned.so"));
    ASSERT_TRUE(r.version) << r.reason;
    EXPECT_EQ(r.version->name(), "versioned");
    EXPECT_EQ(call(*r.version), "version 1");
    EXPECT_GT(r.version->file().size, 0u);
    EXPECT_NE(r.version->file().content_hash, 0u);
}

TEST_F(HandlerLoaderTest, LeavesNoCopyOnDisk) {
    LoadResult r = loader.load("versioned", test::test_handler("v1/versioned.so"));
    ASSERT_TRUE(r.version) << r.reason;
    // Only the folder's owner mark (handler/private_folders) is left: no copy.
    for (const auto& entry : std::filesystem::directory_iterator(loader.scratch_dir()))
        EXPECT_EQ(entry.path().filename(), ".owner");
}

TEST_F(HandlerLoaderTest, TwoLoadsOfOneFileAreIndependent) {
    // dlopen would hand back its cached handle for the same path; private copies prevent that.
    LoadResult a = loader.load("counter", test::test_handler("counter.so"));
    LoadResult b = loader.load("counter", test::test_handler("counter.so"));
    ASSERT_TRUE(a.version && b.version);
    EXPECT_NE(a.version->state(), b.version->state());
    EXPECT_EQ(call(*a.version), "hits 1");
    EXPECT_EQ(call(*a.version), "hits 2");
    EXPECT_EQ(call(*b.version), "hits 1");
    EXPECT_NE(a.version->sequence(), b.version->sequence());
}

TEST_F(HandlerLoaderTest, RunsCleanupWhenTheLastReferenceGoes) {
    const auto marker = scratch / "cleanup-marker";
    ::setenv("CSPD_TEST_CLEANUP_MARKER", marker.c_str(), 1);
    {
        LoadResult r = loader.load("counter", test::test_handler("counter.so"));
        ASSERT_TRUE(r.version) << r.reason;
        call(*r.version);
        call(*r.version);
        auto second_holder = r.version;
        r.version.reset();
        EXPECT_FALSE(std::filesystem::exists(marker));  // still held
    }
    ::unsetenv("CSPD_TEST_CLEANUP_MARKER");
    EXPECT_EQ(test::read_file(marker), "cleanup 2\n");
}

TEST_F(HandlerLoaderTest, RefusesAnotherAbiMajor) {
    LoadResult r = loader.load("bad_abi", test::test_handler("bad_abi.so"));
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::wrong_abi);
    EXPECT_NE(r.reason.find("ABI version 3.0"), std::string::npos) << r.reason;
}

TEST_F(HandlerLoaderTest, RefusesANewerMinorNamingBoth) {
    LoadResult r = loader.load("newer_minor", test::test_handler("newer_minor.so"));
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::wrong_abi);
    const std::string handler = "2." + std::to_string(CSP_ABI_MINOR + 1), host = "2." + std::to_string(CSP_ABI_MINOR);
    EXPECT_NE(r.reason.find("ABI version " + handler + ", newer than this host's " + host), std::string::npos)
        << r.reason;
}

TEST_F(HandlerLoaderTest, LoadsAHandlerBuiltAgainstAbi1) {
    LoadResult r = loader.load("abi1_echo", test::test_handler("abi1_echo.so"));
    ASSERT_TRUE(r.version) << r.reason;
    EXPECT_EQ(r.version->abi(), HandlerAbi::v1);
    EXPECT_FALSE(r.version->blocking());
}

TEST_F(HandlerLoaderTest, RefusesALibraryWithoutTheEntryPoint) {
    LoadResult r = loader.load("no_entry", test::test_handler("no_entry.so"));
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::no_entry_point);
    EXPECT_NE(r.reason.find("csp_handler"), std::string::npos) << r.reason;
}

TEST_F(HandlerLoaderTest, RefusesWhenInitFails) {
    LoadResult r = loader.load("init_fails", test::test_handler("init_fails.so"));
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::init_failed);
    EXPECT_EQ(r.reason, "init returned 7");
}

TEST_F(HandlerLoaderTest, RefusesNonElfFiles) {
    const auto junk = scratch / "junk.so";
    std::ofstream(junk) << "this is not a shared object, just some text long enough to look at";
    LoadResult r = loader.load("junk", junk);
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::not_loadable);
    EXPECT_NE(r.reason.find("not an ELF"), std::string::npos) << r.reason;
}

TEST_F(HandlerLoaderTest, CallsATruncatedFileIncomplete) {
    std::string image = test::read_file(test::test_handler("v1/versioned.so"));
    const auto half = scratch / "half.so";
    std::ofstream(half, std::ios::binary) << image.substr(0, image.size() / 2);
    LoadResult r = loader.load("half", half);
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::incomplete) << r.reason;
}

TEST_F(HandlerLoaderTest, ReportsAMissingFile) {
    LoadResult r = loader.load("ghost", scratch / "ghost.so");
    EXPECT_FALSE(r.version);
    EXPECT_EQ(r.error, LoadError::unreadable);
    EXPECT_NE(r.reason.find("cannot open"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace cspd
