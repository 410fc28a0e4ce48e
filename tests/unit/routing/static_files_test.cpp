// Files beneath the www root, opened by the kernel's RESOLVE_BENEATH: what is inside is
// found, folders serve their index or ask for their slash, nothing outside is reachable.
#include "routing/static_files.hpp"
#include "routing/mime_types.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

namespace cspd {
namespace {

struct StaticFilesTest : ::testing::Test {
    StaticFilesTest() {
        std::filesystem::create_directories(root / "docs");
        std::filesystem::create_directories(root / "empty");
        std::ofstream(root / "index.html") << "<p>home</p>";
        std::ofstream(root / "docs" / "index.html") << "<p>docs</p>";
        std::ofstream(root / "app.js") << "let x;";
        std::ofstream(scratch / "outside.txt") << "secret";
        std::filesystem::create_symlink(scratch / "outside.txt", root / "escape");
        std::filesystem::create_symlink("app.js", root / "alias.js");
        ::mkfifo((root / "pipe").c_str(), 0644);
    }
    std::string body(const StaticFiles::File& file) {
        std::string out;
        EXPECT_TRUE(StaticFiles::read_into(file, out));
        return out;
    }

    test::TempDir scratch;
    std::filesystem::path root = scratch / "www";
    std::unique_ptr<StaticFiles> www = (std::filesystem::create_directories(root), std::make_unique<StaticFiles>(root));
};

TEST_F(StaticFilesTest, FindsFilesWithTheirTypeAndSize) {
    StaticFiles::File file;
    ASSERT_EQ(www->open("/app.js", file), StaticFiles::Outcome::found);
    EXPECT_EQ(file.size, 6u);
    EXPECT_NE(file.content_type.find("javascript"), std::string_view::npos) << file.content_type;
    EXPECT_EQ(body(file), "let x;");
}

TEST_F(StaticFilesTest, AFolderServesItsIndexOrAsksForItsSlash) {
    StaticFiles::File file;
    ASSERT_EQ(www->open("/", file), StaticFiles::Outcome::found);
    EXPECT_EQ(body(file), "<p>home</p>");
    StaticFiles::File docs;
    ASSERT_EQ(www->open("/docs/", docs), StaticFiles::Outcome::found);
    EXPECT_EQ(body(docs), "<p>docs</p>");
    StaticFiles::File redirect;
    EXPECT_EQ(www->open("/docs", redirect), StaticFiles::Outcome::redirect_to_slash);
    EXPECT_FALSE(redirect.is_open());
    StaticFiles::File none;
    EXPECT_EQ(www->open("/empty/", none), StaticFiles::Outcome::not_found);
}

TEST_F(StaticFilesTest, NothingOutsideTheRootAndNothingButRegularFiles) {
    StaticFiles::File file;
    EXPECT_EQ(www->open("/escape", file), StaticFiles::Outcome::not_found);  // symlink out
    EXPECT_EQ(www->open("/../outside.txt", file), StaticFiles::Outcome::not_found);
    EXPECT_EQ(www->open("/pipe", file), StaticFiles::Outcome::not_found);  // a fifo would block
    EXPECT_EQ(www->open("/missing", file), StaticFiles::Outcome::not_found);
    EXPECT_FALSE(file.is_open());
    EXPECT_EQ(www->open("/alias.js", file), StaticFiles::Outcome::found);  // a link within is fine
}

TEST(StaticFiles, RefusesARootThatIsNotAFolder) { EXPECT_THROW(StaticFiles("/nonexistent/www"), std::system_error); }

}  // namespace
}  // namespace cspd

namespace cspd {
namespace {

TEST(MimeTypes, ReadsTheMimeTypesFormat) {
    const MimeTypes types = MimeTypes::parse("# comment\napplication/json\t\tjson\ntext/markdown md markdown\n"
                                             "no-slash  ext\n\nimage/png png # trailing comment\nimage/x-png png\n");
    EXPECT_EQ(types.find("json"), "application/json");
    EXPECT_EQ(types.find("MD"), "text/markdown; charset=utf-8");  // text gets its charset; any case
    EXPECT_EQ(types.find("markdown"), "text/markdown; charset=utf-8");
    EXPECT_EQ(types.find("png"), "image/png");  // the first line naming it wins
    EXPECT_EQ(types.find("ext"), "");
    EXPECT_EQ(types.find("nothing"), "");
}

TEST(MimeTypes, TheSystemTableComesFirstAndTheBuiltInOneAfter) {
    EXPECT_GT(MimeTypes::system().size(), 100u) << "/etc/mime.types (package media-types) is missing";
    EXPECT_EQ(content_type_for("a/b/page.html"), "text/html; charset=utf-8");
    EXPECT_EQ(content_type_for("x.woff2"), "font/woff2");
    EXPECT_EQ(content_type_for("noextension"), "application/octet-stream");
    EXPECT_EQ(content_type_for("dir.d/file"), "application/octet-stream");
}

}  // namespace
}  // namespace cspd
