// A fresh folder under the system temp dir, removed with everything in it.
#pragma once

#include <filesystem>
#include <string>

namespace cspd::test {

class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

/// Where the test handlers were built: "versioned_v1.so" -> full path.
std::filesystem::path test_handler(const std::string& file_name);
/// The handlers cspd ships (hello.so, xpng.so).
std::filesystem::path shipped_handler(const std::string& file_name);

/// Copies `from` to `to` by writing into a temporary name in the same folder, then rename(2).
void install_by_rename(const std::filesystem::path& from, const std::filesystem::path& to);
/// Overwrites `to` in place (O_TRUNC and write, like cp over an existing file).
void install_in_place(const std::filesystem::path& from, const std::filesystem::path& to);

std::string read_file(const std::filesystem::path& file);

}  // namespace cspd::test
