#include "handler/table.hpp"

#include "common/clocks.hpp"
#include "stats/shared_stats.hpp"

namespace cspd {

void HandlerTable::set(const std::string& name, std::shared_ptr<const HandlerVersion> version, bool count) {
    HandlerStats* stats = slot_ ? handler_stats(*slot_, name) : nullptr;
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
        });
        if (version && count) bump(stats->loads);
    }
    if (!version) {
        table_.erase(name);
        return;
    }
    table_[name] = Entry{std::move(version), stats};
}

void HandlerTable::note_refusal(const std::string& name, const std::string& reason, bool count) {
    HandlerStats* stats = slot_ ? handler_stats(*slot_, name) : nullptr;
    if (!stats) return;
    stats->info.write([&](VersionInfo& info) { copy_text(info.refusal, sizeof info.refusal, reason); });
    if (count) bump(stats->refusals);
}

}  // namespace cspd
