#include "process/worker_succession.hpp"

#include "common/clocks.hpp"
#include "process/worker_memory.hpp"

#include <spdlog/spdlog.h>

#include <signal.h>

#include <cstring>

namespace cspd {
using namespace std::chrono_literals;
using Clock = WorkerRecord::Clock;

WorkerSuccession::WorkerSuccession(const Config& config, std::vector<WorkerRecord>& workers, const SlotBanks& banks,
                                   CrashLedger& ledger, StartProcess start)
    : config_(config), workers_(workers), banks_(banks), ledger_(ledger), start_(std::move(start)) {
    if (banks_.count() == 1)
        spdlog::warn("too many event loops for a successor to start beside a worker: a worker replaced for "
                     "its memory or a stuck init stops before its replacement starts");
}

void WorkerSuccession::tick(bool stopping) {
    check_successors();
    if (!stopping) {
        check_memory();
        check_loading();
        check_requests();
    }
    check_retiring();
}

bool WorkerSuccession::reaped(pid_t pid, int status) {
    if (auto it = retiring_.find(pid); it != retiring_.end()) {
        const Retiring retired = it->second;
        retiring_.erase(it);
        clear_slots(retired.index, retired.bank);
        spdlog::info("worker {}: replaced pid {} drained and {}", retired.index, pid, describe_exit(status));
        return true;
    }
    for (unsigned i = 0; i < workers_.size(); ++i) {
        WorkerRecord& worker = workers_[i];
        if (worker.successor != pid) continue;
        clear_slots(i, 1 - worker.bank);
        spdlog::error("worker {}: the successor (pid {}) {} before it was ready; pid {} serves on", i, pid,
                      describe_exit(status), worker.pid);
        worker.successor = 0;
        return true;
    }
    return false;
}

bool WorkerSuccession::take_over_after_death(unsigned index) {
    WorkerRecord& worker = workers_[index];
    if (!worker.successor) return false;
    LoopSlot* slots = banks_.slots(index, worker.bank);
    for (unsigned t = 0; t < banks_.threads(); ++t) slots[t].started_unix_ms.store(0);
    worker.promote_successor();
    worker.announced = false;  // said when it is ready
    return true;
}

void WorkerSuccession::check_successors() {
    for (unsigned i = 0; i < workers_.size(); ++i) {
        const WorkerRecord& worker = workers_[i];
        if (!worker.successor) continue;
        const LoopSlot* slots = banks_.slots(i, 1 - worker.bank);
        bool ready = true;
        for (unsigned t = 0; ready && t < banks_.threads(); ++t) ready = slots[t].ready.load() != 0;
        if (ready) hand_over(i);
    }
}

/// Once a second per worker: one over the limit gets a successor.
void WorkerSuccession::check_memory() {
    if (config_.worker_max_rss_mib == 0) return;
    const auto now = Clock::now();
    for (unsigned i = 0; i < workers_.size(); ++i) {
        WorkerRecord& worker = workers_[i];
        if (!worker.pid || worker.successor || now < worker.next_memory_check) continue;
        worker.next_memory_check = now + 1s;
        const std::size_t rss = resident_mib(worker.pid);
        if (rss <= config_.worker_max_rss_mib) continue;
        spdlog::error("worker {} (pid {}) holds {} MiB, over --worker-max-rss {} MiB: replacing it gracefully; "
                      "handlers whose calls ran in it: {}",
                      i, worker.pid, rss, config_.worker_max_rss_mib,
                      handlers_that_ran(banks_.slots(i, worker.bank), banks_.threads()));
        worker.next_memory_check = now + 10s;  // a replacement that fails is not retried at once
        replace(i, SIGTERM);
    }
}

/// A worker asked for a successor: a handler declared more than its sandbox allows (the successor
/// starts with the wider one), or it lost its vetting fork server under a sandbox that denies
/// starting another. Once a second per worker at most.
void WorkerSuccession::check_requests() {
    const auto now = Clock::now();
    for (unsigned i = 0; i < workers_.size(); ++i) {
        WorkerRecord& worker = workers_[i];
        if (!worker.pid || worker.successor || now < worker.next_requested_succession) continue;
        LoopSlot& first = banks_.slots(i, worker.bank)[0];
        const std::uint32_t reason = first.wants_successor.exchange(0, std::memory_order_acq_rel);
        if (reason == 0) continue;
        worker.next_requested_succession = now + 1s;
        spdlog::info("worker {} (pid {}): {}", i, worker.pid,
                     reason == kSuccessorWiderSandbox
                         ? "a handler declared more than its sandbox allows; a successor starts with a wider one"
                         : "its vetting fork server is gone; a successor starts with a new one");
        replace(i, SIGTERM);
    }
}

/// A loader in a handler's load or init for longer than --init-timeout: that version is fenced
/// (no worker loads it again) and the worker replaced, since its loader thread is lost (and may
/// burn a core) until the process ends.
void WorkerSuccession::check_loading() {
    if (config_.init_timeout_s == 0) return;
    const std::int64_t now = monotonic_now_ns();
    for (unsigned i = 0; i < workers_.size(); ++i) {
        WorkerRecord& worker = workers_[i];
        if (!worker.pid || worker.successor) continue;
        const LoopSlot& first = banks_.slots(i, worker.bank)[0];
        const std::int64_t since = first.loading_since_ns.load(std::memory_order_acquire);
        if (since == 0 || since == worker.stuck_load_since ||
            now - since < std::int64_t(config_.init_timeout_s) * 1'000'000'000)
            continue;
        char name[sizeof first.loading.name];
        std::memcpy(name, first.loading.name, sizeof name);
        name[sizeof name - 1] = '\0';
        const VersionKey key{name, first.loading.size, first.loading.content_hash};
        const auto phase = static_cast<HandlerPhase>(first.loading.phase.load(std::memory_order_relaxed));
        if (first.loading_since_ns.load(std::memory_order_acquire) != since) continue;  // it moved on meanwhile
        worker.stuck_load_since = since;
        spdlog::error("worker {} (pid {}): handler {} did not return {} within {} s (--init-timeout); replacing "
                      "the worker",
                      i, worker.pid, key.name, phase_text(phase), config_.init_timeout_s);
        ledger_.fence(key, phase);
        replace(i, SIGKILL);  // without a successor: a stuck loader cannot drain
    }
}

void WorkerSuccession::check_retiring() {
    const auto now = Clock::now();
    for (auto& [pid, retired] : retiring_) {
        if (retired.killed || now < retired.kill_at) continue;
        retired.killed = true;
        spdlog::error("worker {}: replaced pid {} did not drain within --drain-timeout {} s: killing it",
                      retired.index, pid, config_.drain_timeout_s);
        ::kill(pid, SIGKILL);
    }
}

void WorkerSuccession::replace(unsigned index, int signal) {
    WorkerRecord& worker = workers_[index];
    if (banks_.count() == 1) {
        ::kill(worker.pid, signal);
        return;
    }
    const pid_t successor = start_(index, 1 - worker.bank);
    if (successor > 0) worker.successor = successor;
}

/// A successor is ready: it serves from now on, and the process it replaces drains.
void WorkerSuccession::hand_over(unsigned index) {
    WorkerRecord& worker = workers_[index];
    const pid_t old = worker.pid;
    retiring_[old] = {index, worker.bank, Clock::now() + std::chrono::seconds(config_.drain_timeout_s) + 2s};
    ::kill(old, SIGTERM);
    worker.promote_successor();
    worker.announced = true;  // no "replaced" line: nobody waited for it
    spdlog::info("worker {}: pid {} took over; pid {} drains", index, worker.pid, old);
}

void WorkerSuccession::clear_slots(unsigned index, unsigned bank) {
    LoopSlot* slots = banks_.slots(index, bank);
    for (unsigned t = 0; t < banks_.threads(); ++t) {
        slots[t].pid.store(0);
        slots[t].open_connections.store(0);
        slots[t].started_unix_ms.store(0);  // a bank not in use: /-/status leaves it out
    }
}

}  // namespace cspd
