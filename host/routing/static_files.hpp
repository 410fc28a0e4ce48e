// Serves files under --www. Paths are resolved by the kernel beneath the root
// (openat2 RESOLVE_BENEATH), so neither ".." nor a symlink can lead outside it.
// One per process, shared by every event loop: after watch() it is only read (const),
// and each loop keeps its own StaticCache of small files.
#pragma once

#include "common/unique_fd.hpp"
#include "routing/www_watch.hpp"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

/// Bits of accepted_codings.
enum : unsigned { kAcceptsBrotli = 1, kAcceptsGzip = 2 };
/// Which precompressed codings an Accept-Encoding header takes.
unsigned accepted_codings(std::string_view accept_encoding);

class StaticFiles {
public:
    /// Throws if `root` is not a readable folder.
    explicit StaticFiles(const std::filesystem::path& root);

    /// An opened file: the bytes to send are `size` from `offset` (all of it, or one range).
    struct File {
        UniqueFd fd;
        std::size_t size = 0;
        std::size_t offset = 0;
        std::string_view content_type;
        std::size_t full_size = 0;           ///< the whole file's
        std::time_t mtime = -1;              ///< for Last-Modified
        std::int64_t mtime_ns = 0, ctime_ns = 0;  ///< with device, inode and full_size, the file's identity
        std::uint64_t device = 0, inode = 0;
        std::string_view content_encoding;   ///< "br" or "gzip" for a precompressed sidecar; else empty
        bool has_variants = false;           ///< sidecars exist: the answer varies with Accept-Encoding
        char etag_text[48] = {};             ///< "<mtime ns hex>-<size hex>[-br|-gz]", quoted
        std::size_t etag_size = 0;
        std::string_view etag() const { return {etag_text, etag_size}; }
        bool is_open() const { return static_cast<bool>(fd); }
    };

    enum class Outcome { found, not_found, redirect_to_slash, forbidden };

    /// `decoded_path` starts with '/'. A folder serves its index.html; a folder named
    /// without its trailing slash gets redirect_to_slash, as nginx does. With `accept_encoding`
    /// (the request's Accept-Encoding), a compressible file's sidecar NAME.br or NAME.gz is
    /// opened instead when the client takes that coding (br first).
    Outcome open(std::string_view decoded_path, File& file, std::string_view accept_encoding = {}) const;

    /// Appends the file's bytes to `out`; false on a read error.
    static bool read_into(const File& file, std::string& out);

    /// A copy of what `file` says, without its descriptor.
    static File facts_of(const File& file);

    /// Starts watching the folder (WwwWatch), so small files may be kept in memory.
    void watch();
    const WwwWatch* watcher() const { return watch_.get(); }

private:
    UniqueFd root_;
    std::filesystem::path path_;
    std::unique_ptr<WwwWatch> watch_;
};

}  // namespace cspd
