#include "routing/compressed_files.hpp"

namespace cspd {

std::string_view CompressedFiles::find(const Identity& file) {
    const auto it = entries_.find(file);
    if (it == entries_.end()) return {};
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.body;
}

std::string_view CompressedFiles::store(const Identity& file, std::string body, std::string& spare) {
    if (body.size() > max_bytes_ / 8) {  // not worth what it would push out
        spare = std::move(body);
        return spare;
    }
    if (const auto old = entries_.find(file); old != entries_.end()) {
        bytes_ -= old->second.body.size();
        lru_.erase(old->second.lru);
        entries_.erase(old);
    }
    while (bytes_ + body.size() > max_bytes_ && !lru_.empty()) {
        const auto last = entries_.find(lru_.back());
        bytes_ -= last->second.body.size();
        entries_.erase(last);
        lru_.pop_back();
    }
    lru_.push_front(file);
    bytes_ += body.size();
    Entry& entry = entries_[file];
    entry.body = std::move(body);
    entry.lru = lru_.begin();
    return entry.body;
}

}  // namespace cspd
