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
    if (running == 0 || running > kMaxTrackedHandlers) return {};
    const VersionInfo info = snapshot(slot.handlers[running - 1].info);
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

void CrashLedger::count(const VersionKey& key) {
    if (CrashCount* crashes = counter(key.name)) bump(crashes->crashes);
    auto& times = times_[key];
    const auto now = std::chrono::steady_clock::now();
    times.push_back(now);
    while (!times.empty() && now - times.front() > window_) times.pop_front();
    if (limit_ == 0 || times.size() < limit_) return;
    if (is_quarantined(stats_, key.name, key.size, key.hash)) return;
    add_to_quarantine(stats_, key.name, key.size, key.hash);
    spdlog::error("handler {} (version of {} bytes, fnv {:016x}) crashed {} times within {} s: quarantined in "
                  "every worker; /csp/{} answers 503 until a new version of {}.so is dropped in",
                  key.name, key.size, key.hash, times.size(), window_.count(), key.name, key.name);
}

void CrashLedger::fence(const VersionKey& key, HandlerPhase phase) {
    if (CrashCount* crashes = counter(key.name)) bump(crashes->crashes);
    if (quarantine_phase(stats_, key.name, key.size, key.hash) == static_cast<std::uint32_t>(phase)) return;
    add_to_quarantine(stats_, key.name, key.size, key.hash, static_cast<std::uint32_t>(phase));
    spdlog::error("handler {} (version of {} bytes, fnv {:016x}) brought a worker down {}: fenced; no worker loads "
                  "this version again (drop in a fixed {}.so)",
                  key.name, key.size, key.hash, phase_text(phase), key.name);
}

CrashCount* CrashLedger::counter(const std::string& name) {
    if (name.empty() || name.size() >= kStatsNameBytes) return nullptr;
    for (CrashCount& entry : stats_.crashes) {
        if (!entry.name[0]) {
            copy_text(entry.name, sizeof entry.name, name);
            return &entry;
        }
        if (name == entry.name) return &entry;
    }
    return nullptr;
}

}  // namespace cspd
