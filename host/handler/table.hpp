// One event loop's view of the live handlers. Touched only by its own loop
// thread, so lookups take no lock and no atomic. With shared counters attached,
// each entry also points at its counters, and changes are recorded there for /-/status.
#pragma once

#include "common/fnv1a.hpp"
#include "handler/version.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace cspd {

struct HandlerStats;
struct LoopSlot;

class HandlerTable {
public:
    struct Entry {
        std::shared_ptr<const HandlerVersion> version;
        HandlerStats* stats = nullptr;  ///< null without shared counters, or if the name is not tracked
        /// Serves instead while `version` is quarantined: the version it replaced (a rollback).
        std::shared_ptr<const HandlerVersion> fallback;
    };

    /// The live version for `name`, or null. Valid until this loop next runs a posted update.
    const HandlerVersion* find(std::string_view name) const {
        const Entry* entry = find_entry(name);
        return entry ? entry->version.get() : nullptr;
    }
    const Entry* find_entry(std::string_view name) const {
        auto it = table_.find(name);
        return it == table_.end() ? nullptr : &it->second;
    }

    /// Null `version` removes. Dropping the old reference may unload the old library.
    /// `count` bumps the load counter: one loop per process counts, so loads are not multiplied by loops.
    void set(const std::string& name, std::shared_ptr<const HandlerVersion> version, bool count = false);
    /// Sets what serves `name` while its version is quarantined (null: nothing; 503).
    void set_fallback(const std::string& name, std::shared_ptr<const HandlerVersion> fallback);
    /// Records a refused file for /-/status (the live version, if any, keeps serving).
    void note_refusal(const std::string& name, const std::string& reason, bool count = false);

    /// Records that a newer version of `name` is being vetted (`started`), or no longer is.
    void note_vetting(const std::string& name, bool started);

    /// From now on, changes are recorded in `slot`. What the slot says a process before this one
    /// served is history: its counters stay, but nothing in it is live or being vetted any more.
    void attach_stats(LoopSlot& slot);

    std::size_t size() const { return table_.size(); }

private:
    /// `name`'s counters in the slot, claimed if new. When every entry holds a name, those of
    /// removed names that nothing uses any more are freed first; failing that, it is said once.
    HandlerStats* stats_for(const std::string& name);

    // Inline FNV-1a: names are short, and libstdc++'s out-of-line murmur cost more per request.
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return fnv1a64(s); }
    };
    std::unordered_map<std::string, Entry, Hash, std::equal_to<>> table_;
    // Names removed from the table, with their last version: their counters are freed for another
    // name only once nothing (a deferred reply, a stream) holds that version and counts into them.
    std::unordered_map<std::string, std::weak_ptr<const HandlerVersion>> removed_;
    std::unordered_set<std::string> untracked_;  // names already said to have no counters
    LoopSlot* slot_ = nullptr;
};

}  // namespace cspd
