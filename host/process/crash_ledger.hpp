// Who a worker's death is blamed on, and what crashes add up to: the master counts each
// crash of a handler version, and K of them within T seconds put that version in the
// quarantine list (stats/quarantine_list) that every worker checks.
#pragma once

#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace cspd {

/// A handler version, as crashes are counted and quarantines keyed.
struct VersionKey {
    std::string name;
    std::uint64_t size = 0, hash = 0;
    bool operator<(const VersionKey& o) const { return std::tie(name, size, hash) < std::tie(o.name, o.size, o.hash); }
};

/// The version the handler `running` (index + 1 into slot.handlers) of `slot` refers to; empty name if none.
VersionKey running_version(const LoopSlot& slot, std::uint32_t running);

struct Blamed {
    VersionKey key;
    HandlerPhase phase = HandlerPhase::call;
};

/// The handler versions to blame for the death (waitpid `status`) of the worker whose loops
/// are `slots`: the one its dying thread named (the crash reporter or the exit hook, in any
/// phase of a handler's life); else the handler a loop was running, if that loop's thread
/// reported the crash, or, when no thread could (a sanitizer took the signal, _exit()), for any
/// death while the call was marked. A SIGKILL from an operator or the OOM killer blames nobody
/// the process did not name itself.
std::vector<Blamed> blame_for_death(const LoopSlot* slots, unsigned count, int status);

/// True for the signals a crashing handler dies of.
bool is_fault_signal(int signal);

class CrashLedger {
public:
    /// The version a quarantined one of `name` gives way to, if any (the last good one, kept).
    using RollbackTarget = std::function<std::optional<VersionKey>(const std::string& name)>;

    /// `crashes` within `window` quarantine a version; 0 crashes: never.
    CrashLedger(SharedStats& stats, unsigned crashes, std::chrono::seconds window)
        : stats_(stats), limit_(crashes), window_(window) {}

    /// With a target, quarantining (or fencing) a version rolls its name back to it (--no-rollback: none).
    void roll_back_to(RollbackTarget target) { rollback_target_ = std::move(target); }

    /// Counts one crash of `key` (at `now`); quarantines it when that makes K within the window.
    void count(const VersionKey& key, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
    /// Fences `key` at once: it crashed (or hung) a worker while loading or in init, and would do
    /// so in every worker that loads it. No worker loads it again.
    void fence(const VersionKey& key, HandlerPhase phase);
    /// Charges a death to those blamed for it: a load or init is fenced, anything else counted.
    void charge(const std::vector<Blamed>& blamed);

private:
    CrashCount* counter(const std::string& name);
    /// Quarantines `key` with `detail`, rolled back when a target other than itself is known; the
    /// log line says what happened, then the rollback, or `otherwise` what now answers.
    void quarantine(const VersionKey& key, QuarantineDetail detail, const std::string& what_happened,
                    const std::string& otherwise);

    SharedStats& stats_;
    unsigned limit_;
    std::chrono::seconds window_;
    std::map<VersionKey, std::deque<std::chrono::steady_clock::time_point>> times_;
    RollbackTarget rollback_target_;
    bool counters_full_logged_ = false;
};

}  // namespace cspd
