#include "routing/static_cache.hpp"

namespace cspd {
namespace {
constexpr std::int64_t kMaxAgeNs = 60'000'000'000;  // a safety net: inotify can miss a network file system's change
}

const std::string& StaticCache::key_for(std::string_view path, unsigned codings) {
    key_.assign(path);
    key_.push_back('\0');
    key_.push_back(static_cast<char>('0' + codings));
    return key_;
}

const StaticCache::Entry* StaticCache::find(std::string_view path, unsigned codings, std::int64_t now_ns) {
    if (entries_.empty() || !usable()) return nullptr;
    const auto it = entries_.find(std::string_view(key_for(path, codings)));
    if (it == entries_.end()) return nullptr;
    if (it->second.generation != watch_->generation() || it->second.expires_ns <= now_ns) {
        // Something under www changed: every entry is as stale as this one.
        entries_.clear();
        bytes_ = 0;
        return nullptr;
    }
    return &it->second;
}

void StaticCache::store(std::string_view path, unsigned codings, const StaticFiles::File& file, std::string bytes,
                        std::uint64_t generation, std::int64_t now_ns) {
    if (!usable() || bytes.size() > kMaxFileBytes || generation != watch_->generation()) return;
    const std::size_t cost = bytes.size() + path.size() + sizeof(Entry);
    if (bytes_ + cost > max_bytes_) {
        entries_.clear();  // full: start again with what is asked for now
        bytes_ = 0;
    }
    Entry& entry = entries_[key_for(path, codings)];
    entry.facts = StaticFiles::facts_of(file);
    entry.bytes = std::move(bytes);
    entry.expires_ns = now_ns + kMaxAgeNs;
    entry.generation = generation;
    bytes_ += cost;
}

}  // namespace cspd
