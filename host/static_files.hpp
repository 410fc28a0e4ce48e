// Serves files under --www. Paths are resolved by the kernel beneath the root
// (openat2 RESOLVE_BENEATH), so neither ".." nor a symlink can lead outside it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace cspd {

class StaticFiles {
public:
    /// Throws if `root` is not a readable folder.
    explicit StaticFiles(const std::filesystem::path& root);
    ~StaticFiles();
    StaticFiles(const StaticFiles&) = delete;
    StaticFiles& operator=(const StaticFiles&) = delete;

    /// An opened file, closed on destruction.
    struct File {
        int fd = -1;
        std::size_t size = 0;
        std::string_view content_type;
        File() = default;
        File(File&& o) noexcept : fd(o.fd), size(o.size), content_type(o.content_type) { o.fd = -1; }
        File& operator=(File&& o) noexcept {
            std::swap(fd, o.fd);
            size = o.size;
            content_type = o.content_type;
            return *this;
        }
        ~File();
    };

    enum class Outcome { found, not_found, redirect_to_slash, forbidden };

    /// `decoded_path` starts with '/'. A folder serves its index.html; a folder named
    /// without its trailing slash gets redirect_to_slash, as nginx does.
    Outcome open(std::string_view decoded_path, File& file) const;

    /// Appends the file's bytes to `out`; false on a read error.
    static bool read_into(const File& file, std::string& out);

private:
    int root_fd_ = -1;
};

} // namespace cspd
