// Serves files under --www. Paths are resolved by the kernel beneath the root
// (openat2 RESOLVE_BENEATH), so neither ".." nor a symlink can lead outside it.
#pragma once

#include "common/unique_fd.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace cspd {

class StaticFiles {
public:
    /// Throws if `root` is not a readable folder.
    explicit StaticFiles(const std::filesystem::path& root);

    /// An opened file.
    struct File {
        UniqueFd fd;
        std::size_t size = 0;
        std::string_view content_type;
        bool is_open() const { return static_cast<bool>(fd); }
    };

    enum class Outcome { found, not_found, redirect_to_slash, forbidden };

    /// `decoded_path` starts with '/'. A folder serves its index.html; a folder named
    /// without its trailing slash gets redirect_to_slash, as nginx does.
    Outcome open(std::string_view decoded_path, File& file) const;

    /// Appends the file's bytes to `out`; false on a read error.
    static bool read_into(const File& file, std::string& out);

private:
    UniqueFd root_;
};

}  // namespace cspd
