// The access log's writer: lines from several threads land whole, a pipe nobody reads makes
// loops drop (and count) their batches instead of waiting, and a reopen moves every later line
// to the new file.
#include "serving/access_log.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <memory>
#include <thread>
#include <vector>

namespace cspd {
namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// A 200 for GET `target` from 127.0.0.1, as a session logs it.
void add_line(AccessLines& lines, std::string_view target) {
    HttpRequest request;
    request.method = "GET";
    request.target = target;
    AnswerFacts facts;
    facts.status = 200;
    lines.add(ClientInfo{"127.0.0.1", 40000}, &request, facts);
}

TEST(AccessLog, LinesFromEveryLoopLandWholeInOneFile) {
    test::TempDir dir;
    const auto path = dir / "access.log";
    constexpr int kLoops = 4, kLines = 5000;
    {
        AccessLog log(path, AccessLogFormat::combined);
        log.start();
        std::vector<std::thread> loops;
        for (int t = 0; t < kLoops; ++t)
            loops.emplace_back([&log, t] {
                AccessLines lines(log, 0);
                const std::string target = "/loop" + std::to_string(t) + "/" + std::string(100, 'x');
                for (int i = 0; i < kLines; ++i) add_line(lines, target);
            });  // each hands the rest over as it ends
        for (auto& loop : loops) loop.join();
    }  // the writer writes what it was given before it stops
    const auto lines = lines_of(read_file(path));
    ASSERT_EQ(lines.size(), std::size_t(kLoops * kLines));
    for (const std::string& line : lines) {
        ASSERT_TRUE(line.starts_with("127.0.0.1 - - [")) << line;
        ASSERT_TRUE(line.ends_with("\" 200 0 \"-\" \"-\"")) << line;
    }
}

TEST(AccessLog, APipeNobodyReadsMakesLoopsDropAndCountInsteadOfWaiting) {
    test::TempDir dir;
    const auto fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // open, never read
    ASSERT_GE(reader, 0);
    Counter dropped{0};
    const auto began = std::chrono::steady_clock::now();
    {
        AccessLog log(fifo, AccessLogFormat::combined);
        log.start();
        AccessLines lines(log, 0);
        lines.count_dropped_in(dropped);
        const std::string target(200, 'y');
        // Far more than the pipe and the writer's allowance hold together.
        const std::size_t enough = (AccessLog::kMaxBehind + (1 << 20)) / 200 * 2;
        for (std::size_t i = 0; i < enough; ++i) add_line(lines, target);
        lines.hand_over();
        EXPECT_GT(read(dropped), 0u);
    }  // the writer gives up on the pipe within about a second
    EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30));
    ::close(reader);
}

TEST(AccessLog, AfterAReopenNoLineGoesToTheOldFile) {
    test::TempDir dir;
    const auto path = dir / "access.log";
    auto log = std::make_unique<AccessLog>(path, AccessLogFormat::combined);
    log->start();
    {
        AccessLines lines(*log, 0);
        add_line(lines, "/before");
    }
    std::filesystem::rename(path, dir / "access.log.1");  // logrotate moves it...
    log->reopen();                                         // ...then signals
    {
        AccessLines lines(*log, 0);
        add_line(lines, "/after");
    }
    log.reset();  // writes what it was given
    const std::string old_file = read_file(dir / "access.log.1"), new_file = read_file(path);
    EXPECT_NE(old_file.find("/before"), std::string::npos);
    EXPECT_NE(new_file.find("/after"), std::string::npos);
    EXPECT_EQ(new_file.find("/before"), std::string::npos);
    EXPECT_EQ(old_file.find("/after"), std::string::npos);
}

TEST(AccessLog, APathThatCannotBeOpenedSaysWhy) {
    test::TempDir dir;
    try {
        AccessLog::check(dir / "no" / "such" / "folder" / "access.log");
        FAIL() << "opened";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace cspd
