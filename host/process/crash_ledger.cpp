#include "process/crash_ledger.hpp"

#include "stats/quarantine_list.hpp"

#include <spdlog/spdlog.h>

#include <sys/wait.h>

#include <csignal>
#include <cstring>

namespace cspd {

bool is_fault_signal(int signal) {
    return signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE || signal == SIGILL || signal == SIGABRT ||
           signal == SIGSYS;
}

VersionKey running_version(const LoopSlot& slot, std::uint32_t running) {
    if (running == 0 || running > slot.handlers().size()) return {};
    const VersionInfo info = snapshot(slot.handlers()[running - 1].info);
    return {info.name, info.size, info.content_hash};
}

std::vector<Blamed> blame_for_death(const LoopSlot* slots, unsigned count, int status) {
    if (count > 0) {
        const DeathBlame& named = slots[0].blame;
        if (const auto phase = named.phase.load(std::memory_order_acquire); phase != 0) {
            char name[sizeof named.name];
            std::memcpy(name, named.name, sizeof name);
            name[sizeof name - 1] = '\0';
            return {{{name, named.size, named.content_hash}, static_cast<HandlerPhase>(phase)}};
        }
    }
    bool reported = false;
    for (unsigned t = 0; t < count; ++t)
        reported |= slots[t].crashed.load() != 0 || slots[t].crashed_elsewhere.load() != 0;
    // Any death while a call runs is the call's doing (a fault, _exit()), but a SIGKILL from outside.
    const bool crash_like = !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    std::vector<Blamed> blamed;
    for (unsigned t = 0; t < count; ++t) {
        const LoopSlot& slot = slots[t];
        const bool in_handler = slot.handler_started_ns.load() != 0;
        const bool faulted = reported ? slot.crashed.load() != 0 : crash_like;
        if (!faulted || !in_handler) continue;
        if (VersionKey key = running_version(slot, slot.running_handler.load()); !key.name.empty())
            blamed.push_back({std::move(key), HandlerPhase::call});
    }
    return blamed;
}

void CrashLedger::count(const VersionKey& key, std::chrono::steady_clock::time_point now) {
    if (CrashCount* crashes = counter(key.name)) bump(crashes->crashes);
    auto& times = times_[key];
    times.push_back(now);
    while (!times.empty() && now - times.front() > window_) times.pop_front();
    if (limit_ == 0 || times.size() < limit_) return;
    if (is_quarantined(stats_, key.name, key.size, key.hash)) return;
    QuarantineDetail detail;
    detail.crashes = static_cast<std::uint32_t>(times.size());
    quarantine(key, detail,
               fmt::format("crashed {} times within {} s: quarantined in every worker", times.size(), window_.count()),
               fmt::format("/csp/{} answers 503 until a new version of {}.so is dropped in", key.name, key.name));
}

void CrashLedger::charge(const std::vector<Blamed>& blamed) {
    for (const auto& [key, phase] : blamed) {
        if (phase == HandlerPhase::load || phase == HandlerPhase::init)
            fence(key, phase);
        else
            count(key);
    }
}

void CrashLedger::fence(const VersionKey& key, HandlerPhase phase) {
    if (CrashCount* crashes = counter(key.name)) bump(crashes->crashes);
    if (quarantine_phase(stats_, key.name, key.size, key.hash) == static_cast<std::uint32_t>(phase)) return;
    QuarantineDetail detail;
    detail.phase = static_cast<std::uint32_t>(phase);
    detail.crashes = 1;
    quarantine(key, detail,
               fmt::format("brought a worker down {}: fenced; no worker loads this version again", phase_text(phase)),
               fmt::format("drop in a fixed {}.so", key.name));
}

void CrashLedger::quarantine(const VersionKey& key, QuarantineDetail detail, const std::string& what_happened,
                             const std::string& otherwise) {
    std::optional<VersionKey> target = rollback_target_ ? rollback_target_(key.name) : std::nullopt;
    if (target && (target->hash == key.hash && target->size == key.size)) target.reset();
    if (target && is_quarantined(stats_, key.name, target->size, target->hash)) target.reset();
    if (target) {
        detail.rolled_back_to_size = target->size;
        detail.rolled_back_to_hash = target->hash;
    }
    add_to_quarantine(stats_, key.name, key.size, key.hash, detail);
    if (!target) {
        spdlog::error("handler {} (version of {} bytes, fnv {:016x}) {}; {}", key.name, key.size, key.hash,
                      what_happened, otherwise);
        return;
    }
    if (CrashCount* crashes = counter(key.name)) bump(crashes->rollbacks);
    spdlog::error("handler {} (version of {} bytes, fnv {:016x}) {}; rolled back: the version it replaced ({} bytes, "
                  "fnv {:016x}) serves /csp/{} again until a new version of {}.so is dropped in",
                  key.name, key.size, key.hash, what_happened, target->size, target->hash, key.name, key.name);
}

CrashCount* CrashLedger::counter(const std::string& name) {
    if (name.empty() || name.size() >= kStatsNameBytes) return nullptr;
    for (CrashCount& entry : stats_.crashes()) {
        if (!entry.name[0]) {
            copy_text(entry.name, sizeof entry.name, name);
            return &entry;
        }
        if (name == entry.name) return &entry;
    }
    // Crash counts are totals for /metrics and are never given to another name.
    if (!counters_full_logged_) {
        counters_full_logged_ = true;
        spdlog::warn("handler {}: its crashes are quarantined as usual but not counted in /-/status or /metrics: "
                     "{} handler names have crashed already (--max-handlers)",
                     name, stats_.crashes().size());
    }
    return nullptr;
}

}  // namespace cspd
