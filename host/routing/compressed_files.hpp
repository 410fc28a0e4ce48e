// Static files compressed on the fly (those without a .br/.gz sidecar), kept per event loop so
// that a file is compressed once per coding while it stays as it is: keyed by the file's identity
// (device, inode, size, modification and change times: a file replaced or rewritten changes its
// ctime, which no tool can set back), so a changed file is a new key, never a stale body.
// Bounded by bytes, the least recently used going first.
#pragma once

#include "compression/content_coding.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cspd {

class CompressedFiles {
public:
    /// Files larger than this are sent as they are: compressing them whole on the loop would hold
    /// it, and what is compressed is always kept (an eighth of the bound at most), never redone.
    static constexpr std::size_t kMaxFileBytes = 1024 * 1024;

    explicit CompressedFiles(std::size_t max_bytes) : max_bytes_(max_bytes) {}

    struct Identity {
        std::uint64_t device = 0, inode = 0, size = 0;
        std::int64_t mtime_ns = 0, ctime_ns = 0;
        ContentCoding coding = ContentCoding::identity;
        bool operator==(const Identity&) const = default;
    };

    /// The compressed body kept for `file`, or empty (data() null) if none is.
    std::string_view find(const Identity& file);
    /// Keeps `body` as `file`'s, evicting the least recently used; a view of it, valid until the next
    /// store (or of `body` itself, moved into `spare`, when it is larger than an eighth of the bound).
    std::string_view store(const Identity& file, std::string body, std::string& spare);

    std::size_t bytes() const { return bytes_; }

private:
    struct Hash {
        std::size_t operator()(const Identity& id) const {
            return std::hash<std::uint64_t>{}(id.inode * 0x9e3779b97f4a7c15ULL ^ id.size ^ id.device * 131 ^
                                              static_cast<std::uint64_t>(id.mtime_ns) * 31 ^
                                              static_cast<std::uint64_t>(id.ctime_ns) * 17 ^
                                              static_cast<std::uint64_t>(id.coding));
        }
    };
    struct Entry {
        std::string body;
        std::list<Identity>::iterator lru;
    };
    const std::size_t max_bytes_;
    std::size_t bytes_ = 0;
    std::unordered_map<Identity, Entry, Hash> entries_;
    std::list<Identity> lru_;  // most recent first
};

}  // namespace cspd
