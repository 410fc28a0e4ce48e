// The reload state machine: files appear, change, break and vanish; the registry follows.
#include "handler/watcher.hpp"

#include "handler/loader.hpp"
#include "handler/registry.hpp"
#include "handler/sdk_bridge.hpp"
#include "handler/table.hpp"
#include "temp_dir.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

namespace cspd {
namespace {
using namespace std::chrono_literals;

class HandlerWatcherTest : public ::testing::Test {
protected:
    HandlerWatcherTest() {
        std::filesystem::create_directories(folder);
        registry.subscribe([this](const std::string& name, std::shared_ptr<const HandlerVersion> version) {
            ++changes;
            table.set(name, std::move(version));
        });
    }

    /// Runs the watcher's loop until `condition` holds (true) or `timeout` passes (false).
    template <class Condition>
    bool run_until(Condition condition, std::chrono::milliseconds timeout = 2s) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!condition()) {
            if (std::chrono::steady_clock::now() > deadline) return false;
            io.run_for(5ms);
            io.restart();
        }
        return true;
    }

    /// The body the live version of `name` answers with, or "" if none is live.
    std::string body_of(const std::string& name) {
        const HandlerVersion* v = table.find(name);
        if (!v) return "";
        const std::string path = "/csp/" + name;
        HttpRequest request;
        request.method = "GET";
        HandlerRequestView view;
        view.bind(request, {path, "", "", "127.0.0.1", 1, v->state(), v, {}}, v->abi());
        HandlerReply reply;
        reply.reset(v->abi());
        v->handle(view.raw(), view.raw_v1(), reply.raw());
        return std::string(reply.body());
    }

    void settle() {
        run_until([] { return false; }, 100ms);
    }

    test::TempDir scratch;
    std::filesystem::path folder = scratch / "handlers";
    boost::asio::io_context io;
    HandlerLoader loader{scratch.path()};
    HandlerRegistry registry;
    HandlerTable table;
    int changes = 0;
    HandlerWatcher watcher{io, folder, loader, registry};
};

TEST_F(HandlerWatcherTest, LoadsWhatIsThereAtStart) {
    std::filesystem::copy_file(test::shipped_handler("hello.so"), folder / "hello.so");
    watcher.start();
    EXPECT_EQ(body_of("hello"), "<h1>HELLO WORLD</h1>");
}

TEST_F(HandlerWatcherTest, PicksUpAFileMovedIn) {
    watcher.start();
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 1"; }));
}

TEST_F(HandlerWatcherTest, ReloadsAFileReplacedByRename) {
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    watcher.start();
    ASSERT_EQ(body_of("versioned"), "version 1");
    test::install_by_rename(test::test_handler("v2/versioned.so"), folder / "versioned.so");
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 2"; }));
}

TEST_F(HandlerWatcherTest, ReloadsAFileOverwrittenInPlace) {
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    watcher.start();
    test::install_in_place(test::test_handler("v2/versioned.so"), folder / "versioned.so");
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 2"; }));
}

TEST_F(HandlerWatcherTest, ReloadsACopyWithTheSameSizeAndMtime) {
    // Reproducible builds give equal sizes and normalised mtimes; the change must still be seen.
    const auto v1 = scratch / "v1.so", v2 = scratch / "v2.so";
    std::filesystem::copy_file(test::test_handler("v1/versioned.so"), v1);
    std::filesystem::copy_file(test::test_handler("v2/versioned.so"), v2);
    ASSERT_EQ(std::filesystem::file_size(v1), std::filesystem::file_size(v2));
    test::install_in_place(v1, folder / "versioned.so");
    const auto mtime = std::filesystem::last_write_time(folder / "versioned.so");
    watcher.start();
    ASSERT_EQ(body_of("versioned"), "version 1");
    test::install_in_place(v2, folder / "versioned.so");
    std::filesystem::last_write_time(folder / "versioned.so", mtime);  // as `cp -p` would
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 2"; }));
}

TEST_F(HandlerWatcherTest, RemovesADeletedFile) {
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    watcher.start();
    ASSERT_NE(table.find("versioned"), nullptr);
    std::filesystem::remove(folder / "versioned.so");
    EXPECT_TRUE(run_until([&] { return table.find("versioned") == nullptr; }));
}

TEST_F(HandlerWatcherTest, KeepsTheOldVersionWhenTheNewOneIsBroken) {
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    watcher.start();
    for (const char* broken : {"bad_abi.so", "no_entry.so", "init_fails.so"}) {
        const int before = changes;
        test::install_by_rename(test::test_handler(broken), folder / "versioned.so");
        settle();
        EXPECT_EQ(changes, before) << broken;
        EXPECT_EQ(body_of("versioned"), "version 1") << broken;
    }
    // A good file afterwards is taken again.
    test::install_by_rename(test::test_handler("v2/versioned.so"), folder / "versioned.so");
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 2"; }));
}

TEST_F(HandlerWatcherTest, WaitsForASlowWriterAndLoadsOnlyTheWholeFile) {
    test::install_by_rename(test::test_handler("v1/versioned.so"), folder / "versioned.so");
    watcher.start();
    const int before = changes;
    const std::string image = test::read_file(test::test_handler("v2/versioned.so"));
    // Three separate open-write-close rounds, like a slow upload appending pieces.
    const std::size_t third = image.size() / 3;
    for (int piece = 0; piece < 3; ++piece) {
        int flags = O_WRONLY | O_CLOEXEC | (piece == 0 ? O_TRUNC : O_APPEND);
        int fd = ::open((folder / "versioned.so").c_str(), flags);
        ASSERT_GE(fd, 0);
        std::string_view part = std::string_view(image).substr(piece * third, piece == 2 ? std::string::npos : third);
        ASSERT_EQ(::write(fd, part.data(), part.size()), static_cast<ssize_t>(part.size()));
        ::close(fd);
        if (piece < 2) {
            settle();
            EXPECT_EQ(body_of("versioned"), "version 1") << "after piece " << piece;
        }
    }
    EXPECT_TRUE(run_until([&] { return body_of("versioned") == "version 2"; }));
    EXPECT_EQ(changes, before + 1);  // exactly one reload, of the whole file
}

TEST_F(HandlerWatcherTest, IgnoresFilesThatAreNotHandlers) {
    watcher.start();
    for (const char* name : {"notes.txt", "bad name.so", "dot.ted.so", ".hidden.so", "x.so.tmp"})
        std::filesystem::copy_file(test::shipped_handler("hello.so"), folder / name);
    settle();
    EXPECT_EQ(changes, 0);
    EXPECT_EQ(table.size(), 0u);
}

TEST_F(HandlerWatcherTest, RescanCatchesUpWithTheFolder) {
    watcher.start();
    watcher.stop();  // changes made now go unseen...
    std::filesystem::copy_file(test::shipped_handler("xpng.so"), folder / "xpng.so");
    settle();
    EXPECT_EQ(table.find("xpng"), nullptr);
    watcher.rescan();  // ...until a rescan
    EXPECT_NE(table.find("xpng"), nullptr);
}

}  // namespace
}  // namespace cspd
