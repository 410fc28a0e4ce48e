#include "process/vetting_verdicts.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(VettingVerdicts, AVerdictWrittenByOneIsFoundByAnother) {
    test::TempDir server;
    const VettingVerdicts first(server.path()), second(server.path());
    EXPECT_FALSE(second.find("echo.00000000000000ab.10"));
    first.record("echo.00000000000000ab.10", GateVerdict{});
    first.record("hang.00000000000000cd.20", GateVerdict{false, true, "fenced: did not return in init"});
    const auto passed = second.find("echo.00000000000000ab.10");
    ASSERT_TRUE(passed);
    EXPECT_TRUE(passed->pass);
    const auto fenced = second.find("hang.00000000000000cd.20");
    ASSERT_TRUE(fenced);
    EXPECT_FALSE(fenced->pass);
    EXPECT_TRUE(fenced->fenced);
    EXPECT_EQ(fenced->reason, "fenced: did not return in init");
}

TEST(VettingVerdicts, OneClaimAtATimeAndFreedWhenLetGo) {
    test::TempDir server;
    const VettingVerdicts verdicts(server.path());
    std::optional<UniqueFd> mine = verdicts.claim("echo.1.2");
    ASSERT_TRUE(mine);
    EXPECT_TRUE(*mine);
    EXPECT_FALSE(verdicts.claim("echo.1.2"));  // another open of the lock: held
    EXPECT_TRUE(verdicts.claim("other.1.2"));  // another version: free
    mine.reset();
    EXPECT_TRUE(verdicts.claim("echo.1.2"));
}

TEST(VettingVerdicts, WithoutAServerFolderNothingIsShared) {
    const VettingVerdicts verdicts;
    EXPECT_FALSE(verdicts.enabled());
    EXPECT_FALSE(verdicts.find("echo.1.2"));
}

}  // namespace
}  // namespace cspd
