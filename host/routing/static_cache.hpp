// Small static files kept in memory, per event loop (shared nothing): what open, fstat and read
// found, so a hit costs a lookup and a copy, as nginx's open_file_cache saves the opens. Entries
// are stale as soon as anything under www changes (WwwWatch's generation moves), and after a
// minute whatever happens; without a working watch nothing is kept.
#pragma once

#include "routing/static_files.hpp"
#include "routing/www_watch.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cspd {

class StaticCache {
public:
    static constexpr std::size_t kMaxFileBytes = 64 * 1024;

    /// `watch` null, or not working: nothing is cached.
    StaticCache(const WwwWatch* watch, std::size_t max_bytes) : watch_(watch), max_bytes_(max_bytes) {}

    struct Entry {
        StaticFiles::File facts;  ///< without a descriptor
        std::string bytes;        ///< the whole file (or sidecar)
        std::int64_t expires_ns = 0;
        std::uint64_t generation = 0;
    };

    /// What was kept for `path` asked with `codings` (accepted_codings), or null.
    const Entry* find(std::string_view path, unsigned codings, std::int64_t now_ns);
    /// The generation to give store(): read it before opening the file, so a change made while it is
    /// read makes the entry stale at once.
    std::uint64_t generation() const { return usable() ? watch_->generation() : 0; }
    bool usable() const { return watch_ && watch_->working() && max_bytes_ > 0; }
    /// Keeps `bytes` as `file`'s (it must be all of it, and at most kMaxFileBytes).
    void store(std::string_view path, unsigned codings, const StaticFiles::File& file, std::string bytes,
               std::uint64_t generation, std::int64_t now_ns);

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    const std::string& key_for(std::string_view path, unsigned codings);

    const WwwWatch* watch_;
    std::size_t max_bytes_, bytes_ = 0;
    std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries_;
    std::string key_;
};

}  // namespace cspd
