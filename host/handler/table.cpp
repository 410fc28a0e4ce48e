#include "handler/table.hpp"

#include "common/clocks.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

HandlerStats* HandlerTable::stats_for(const std::string& name) {
    if (!slot_) return nullptr;
    if (HandlerStats* stats = handler_stats(*slot_, name)) return stats;
    bool freed = false;
    for (auto it = removed_.begin(); it != removed_.end();) {
        if (it->second.expired() && it->first != name) {
            freed |= retire_handler_stats(*slot_, it->first);
            it = removed_.erase(it);
        } else {
            ++it;
        }
    }
    if (freed)
        if (HandlerStats* stats = handler_stats(*slot_, name)) return stats;
    if (name.size() < kStatsNameBytes && untracked_.insert(name).second)
        spdlog::warn("handler {}: served, but not in /-/status, /metrics or the dashboard: this event loop already "
                     "counts {} handler names that are live or still in use (--max-handlers); raise it, or remove some",
                     name, slot_->handlers().size());
    return nullptr;
}

void HandlerTable::set(const std::string& name, std::shared_ptr<const HandlerVersion> version, bool count) {
    HandlerStats* stats = stats_for(name);
    if (stats) {
        stats->info.write([&](VersionInfo& info) {
            info.live = version != nullptr;
            if (!version) return;
            const HandlerFileIdentity& file = version->file();
            info.sequence = version->sequence();
            info.size = file.size;
            info.content_hash = file.content_hash;
            info.mtime_ns = file.mtime_ns;
            info.loaded_unix_ms = unix_now_ms();
            info.refusal[0] = '\0';
            info.vetting_since_unix_ms = 0;
        });
        if (version && count) bump(stats->loads);
    }
    if (!version) {
        if (const auto it = table_.find(name); it != table_.end()) {
            removed_[name] = it->second.version;
            table_.erase(it);
        } else {
            removed_.try_emplace(name);  // refused only: nothing ever ran
        }
        return;
    }
    removed_.erase(name);
    untracked_.erase(name);
    Entry& entry = table_[name];
    entry.version = std::move(version);
    entry.stats = stats;  // the fallback stays until set_fallback(), which follows a change of it
}

void HandlerTable::set_fallback(const std::string& name, std::shared_ptr<const HandlerVersion> fallback) {
    if (const auto it = table_.find(name); it != table_.end()) it->second.fallback = std::move(fallback);
}

void HandlerTable::note_refusal(const std::string& name, const std::string& reason, bool count) {
    // A name only ever refused gets no removal when its file goes: its counters may be freed
    // (once every entry holds a name) as if removed; a later refusal claims them again.
    if (!table_.contains(name)) removed_.try_emplace(name);
    HandlerStats* stats = stats_for(name);
    if (!stats) return;
    stats->info.write([&](VersionInfo& info) {
        copy_text(info.refusal, sizeof info.refusal, reason);
        info.vetting_since_unix_ms = 0;
    });
    if (count && !reason.empty()) bump(stats->refusals);  // empty: a refused file went
}

void HandlerTable::note_vetting(const std::string& name, bool started) {
    if (!table_.contains(name)) removed_.try_emplace(name);  // as for a refusal: freed if nothing comes of it
    HandlerStats* stats = started ? stats_for(name) : (slot_ ? handler_stats(*slot_, name) : nullptr);
    if (!stats) return;
    stats->info.write([&](VersionInfo& info) { info.vetting_since_unix_ms = started ? unix_now_ms() : 0; });
}

void HandlerTable::attach_stats(LoopSlot& slot) {
    slot_ = &slot;
    for (HandlerStats& entry : slot.handlers()) {
        const std::uint32_t use = entry.in_use.load(std::memory_order_acquire);
        if (use == kStatsNeverUsed) break;  // claimed in order
        if (use != kStatsInUse) continue;
        entry.info.write([](VersionInfo& info) {
            info.live = false;
            info.vetting_since_unix_ms = 0;
        });
        removed_.try_emplace(entry.info.writer_view().name);  // freed for another name unless loaded again
    }
}

}  // namespace cspd
