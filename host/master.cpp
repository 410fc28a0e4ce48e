#include "master.hpp"

#include "lifecycle_signals.hpp"
#include "listener.hpp"
#include "log_file.hpp"
#include "server.hpp"
#include "shared_stats.hpp"
#include "static_files.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <tuple>

extern char** environ;

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// Moves a descriptor above the fixed numbers workers receive (3, 4, … `above`), so that
/// no dup2 at spawn overwrites a descriptor another dup2 still has to read.
int move_high(int fd, int above) {
    if (fd > above) return fd;
    int high = ::fcntl(fd, F_DUPFD_CLOEXEC, above + 1);
    if (high < 0) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    ::close(fd);
    return high;
}

bool is_fault(int signal) {
    return signal == SIGSEGV || signal == SIGBUS || signal == SIGFPE || signal == SIGILL || signal == SIGABRT ||
           signal == SIGSYS;
}

std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        const int signal = WTERMSIG(status);
        return std::string("killed by signal ") + std::to_string(signal) + " (" + sigdescr_np(signal) + ")";
    }
    return "exited with code " + std::to_string(WEXITSTATUS(status));
}

/// The handler version a crash is blamed on.
struct VersionKey {
    std::string name;
    std::uint64_t size = 0, hash = 0;
    bool operator<(const VersionKey& o) const { return std::tie(name, size, hash) < std::tie(o.name, o.size, o.hash); }
};

struct Worker {
    pid_t pid = 0;
    Clock::time_point started;
    unsigned quick_deaths = 0;  // deaths in a row, each soon after its start
    bool watchdog_fired = false;
    Clock::time_point watchdog_at;
    bool announced = false;     // "ready" logged for this pid
    std::int64_t died_ns = 0;   // CLOCK_MONOTONIC when the previous one was reaped
};

class Supervisor {
public:
    Supervisor(const Config& config, const std::vector<std::string>& argv)
        : config_(config), argv_(argv), shared_(SharedStatsMapping::create()), stats_(shared_.stats()),
          signals_(io_, SIGINT, SIGTERM, SIGQUIT), requests_(io_, SIGHUP, SIGUSR1), children_(io_, SIGCHLD),
          tick_(io_), deadline_(io_) {
        workers_.resize(config_.workers);
        restart_timers_.reserve(config_.workers);
        for (unsigned i = 0; i < config_.workers; ++i) restart_timers_.emplace_back(io_);
        stats_.slot_count.store(config_.loops_total());
        listeners_.reserve(config_.loops_total());
        unsigned short port = config_.port;
        for (unsigned i = 0; i < config_.loops_total(); ++i) {
            listeners_.push_back(move_high(open_listener(config_.bind_address, port), highest_fixed_fd()));
            port = bound_port(listeners_.back());  // --port 0: the first socket picks, the rest join it
        }
        port_ = port;
        if (!config_.status_listen.empty()) {
            const HostPort where = parse_host_port(config_.status_listen);
            status_listener_ = move_high(open_listener(where.address, where.port), highest_fixed_fd());
            spdlog::info("/-/status and /metrics on {}:{} only", where.address, bound_port(status_listener_));
        }
        stats_fd_ = ::fcntl(shared_.fd(), F_DUPFD_CLOEXEC, highest_fixed_fd() + 1);
        if (stats_fd_ < 0) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    }

    ~Supervisor() {
        for (int fd : listeners_) ::close(fd);
        if (stats_fd_ >= 0) ::close(stats_fd_);
        if (status_listener_ >= 0) ::close(status_listener_);
    }

    int run() {
        unblock_lifecycle_signals();  // the signal_sets exist: from here on signals are handled
        wait_for_signals();
        wait_for_requests();
        wait_for_children();
        for (unsigned i = 0; i < workers_.size(); ++i) spawn(i);
        tick();
        io_.run();
        return exit_code_;
    }

private:
    int highest_fixed_fd() const { return WorkerRole::kFirstListenerFd + static_cast<int>(config_.threads); }

    // --- workers ---------------------------------------------------------------------

    void spawn(unsigned index) {
        if (stopping_) return;
        std::vector<std::string> args = argv_;
        args.insert(args.end(), {"--worker-index", std::to_string(index), "--master-pid", std::to_string(::getpid())});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, stats_fd_, WorkerRole::kStatsFd);
        for (unsigned t = 0; t < config_.threads; ++t)
            posix_spawn_file_actions_adddup2(&actions, listeners_[index * config_.threads + t],
                                             WorkerRole::kFirstListenerFd + static_cast<int>(t));
        if (status_listener_ >= 0)
            posix_spawn_file_actions_adddup2(&actions, status_listener_,
                                             WorkerRole::kFirstListenerFd + static_cast<int>(config_.threads));
        posix_spawnattr_t attributes;
        posix_spawnattr_init(&attributes);
        // Blocked until the worker has its handlers: an early SIGTERM drains it instead of killing it.
        const sigset_t blocked = lifecycle_signals();
        posix_spawnattr_setsigmask(&attributes, &blocked);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
        // The slots are reset before the worker exists: it may mark itself ready before posix_spawn returns.
        for (unsigned t = 0; t < config_.threads; ++t) {
            LoopSlot& slot = stats_.slots[index * config_.threads + t];
            slot.ready.store(0);
            slot.crashed.store(0);
            slot.crashed_elsewhere.store(0);
            slot.handler_started_ns.store(0);
            slot.thread_id.store(0);
            slot.started_unix_ms.store(unix_now_ms());
        }
        pid_t pid = 0;
        const int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attributes);
        if (rc != 0) {
            spdlog::error("cannot start worker {}: {}; trying again in 1 s", index, std::strerror(rc));
            schedule_spawn(index, 1s);
            return;
        }
        Worker& worker = workers_[index];
        worker.pid = pid;
        worker.started = Clock::now();
        worker.watchdog_fired = false;
        worker.announced = false;
        for (unsigned t = 0; t < config_.threads; ++t) stats_.slots[index * config_.threads + t].pid.store(pid);
        spdlog::debug("worker {} started as pid {}", index, pid);
    }

    void schedule_spawn(unsigned index, Clock::duration delay) {
        if (delay == Clock::duration::zero()) {
            spawn(index);
            return;
        }
        restart_timers_[index].expires_after(delay);
        restart_timers_[index].async_wait([this, index](boost::system::error_code ec) {
            if (!ec) spawn(index);
        });
    }

    void wait_for_children() {
        children_.async_wait([this](boost::system::error_code ec, int) {
            if (ec) return;
            reap();
            wait_for_children();
        });
    }

    void reap() {
        for (;;) {
            int status = 0;
            const pid_t pid = ::waitpid(-1, &status, WNOHANG);
            if (pid <= 0) break;
            for (unsigned i = 0; i < workers_.size(); ++i)
                if (workers_[i].pid == pid) on_worker_exit(i, status);
        }
        if (stopping_ && live_workers() == 0) finish();
    }

    void on_worker_exit(unsigned index, int status) {
        Worker& worker = workers_[index];
        const pid_t pid = worker.pid;
        worker.pid = 0;
        worker.died_ns = monotonic_now_ns();
        // The handler a loop was running is to blame if that loop's thread reported the crash, or, when
        // no thread could report (a sanitizer took the signal), if the death looks like a crash. A
        // SIGKILL from an operator or the OOM killer blames nobody.
        bool reported = false;
        for (unsigned t = 0; t < config_.threads; ++t) {
            const LoopSlot& slot = stats_.slots[index * config_.threads + t];
            reported |= slot.crashed.load() != 0 || slot.crashed_elsewhere.load() != 0;
        }
        const bool crash_like = WIFSIGNALED(status) ? is_fault(WTERMSIG(status)) : WEXITSTATUS(status) != 0;
        std::vector<VersionKey> blamed;
        for (unsigned t = 0; t < config_.threads; ++t) {
            LoopSlot& slot = stats_.slots[index * config_.threads + t];
            const bool in_handler = slot.handler_started_ns.load() != 0;
            const std::uint32_t running = slot.running_handler.load();
            const bool faulted = reported ? slot.crashed.load() != 0 : crash_like;
            if (faulted && in_handler && running > 0 && running <= kMaxTrackedHandlers) {
                const VersionInfo info = snapshot(slot.handlers[running - 1].info);
                blamed.push_back({info.name, info.size, info.content_hash});
            }
            slot.pid.store(0);
            slot.open_connections.store(0);
            slot.handler_started_ns.store(0);
        }
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (stopping_) {
            // A worker that could not stop cleanly makes the whole stop unclean: say so in the exit code.
            if (!clean && !quitting_) exit_code_ = 1;
            spdlog::log(clean ? spdlog::level::info : spdlog::level::err, "worker {} (pid {}) {}", index, pid,
                        describe_exit(status));
            return;
        }
        spdlog::log(clean ? spdlog::level::warn : spdlog::level::err,
            "worker {} (pid {}) {}{}; starting a replacement", index, pid, describe_exit(status),
            blamed.empty() ? "" : " while handler " + blamed.front().name + " was running");
        if (!worker.watchdog_fired)  // the watchdog has already counted its own kill
            for (const auto& key : blamed) count_crash(key);

        bump(stats_.worker_restarts);
        for (unsigned t = 0; t < config_.threads; ++t) stats_.slots[index * config_.threads + t].restarts.fetch_add(1);
        // Back-off only for a worker that keeps dying young: the first two go back at once.
        const bool young = Clock::now() - worker.started < 10s;
        worker.quick_deaths = young ? worker.quick_deaths + 1 : 1;
        Clock::duration delay = Clock::duration::zero();
        if (worker.quick_deaths > 2) {
            delay = std::min<Clock::duration>(100ms * (1u << std::min(worker.quick_deaths - 3, 6u)), 5s);
            spdlog::warn("worker {} keeps dying ({} times in a row); next start in {} ms", index,
                         worker.quick_deaths,
                         std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
        }
        schedule_spawn(index, delay);
    }

    unsigned live_workers() const {
        unsigned n = 0;
        for (const auto& w : workers_) n += w.pid != 0;
        return n;
    }

    void signal_workers(int signal) {
        for (const auto& w : workers_)
            if (w.pid) ::kill(w.pid, signal);
    }

    // --- crashes and quarantine ------------------------------------------------------

    void count_crash(const VersionKey& key) {
        CrashCount* counter = crash_counter(key.name);
        if (counter) bump(counter->crashes);
        auto& times = crash_times_[key];
        const auto now = Clock::now();
        times.push_back(now);
        while (!times.empty() && now - times.front() > std::chrono::seconds(config_.quarantine_window_s))
            times.pop_front();
        if (config_.quarantine_crashes == 0 || times.size() < config_.quarantine_crashes) return;
        if (is_quarantined(stats_, key.name, key.size, key.hash)) return;
        quarantine(key);
        spdlog::error("handler {} (version of {} bytes, fnv {:016x}) crashed {} times within {} s: quarantined in "
                      "every worker; /csp/{} answers 503 until a new version of {}.so is dropped in",
                      key.name, key.size, key.hash, times.size(), config_.quarantine_window_s, key.name, key.name);
    }

    CrashCount* crash_counter(const std::string& name) {
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

    void quarantine(const VersionKey& key) {
        // Readers retry while the generation is odd; the oldest entry makes room when full.
        const std::uint32_t generation = stats_.quarantine_generation.load();
        stats_.quarantine_generation.store(generation + 1);
        std::atomic_thread_fence(std::memory_order_release);
        std::uint32_t count = stats_.quarantine_count.load();
        if (count == kMaxQuarantined) {
            std::memmove(&stats_.quarantine[0], &stats_.quarantine[1], sizeof(QuarantineEntry) * (kMaxQuarantined - 1));
            --count;
        }
        QuarantineEntry& entry = stats_.quarantine[count];
        copy_text(entry.name, sizeof entry.name, key.name);
        entry.size = key.size;
        entry.content_hash = key.hash;
        entry.since_unix_ms = unix_now_ms();
        stats_.quarantine_count.store(count + 1);
        stats_.quarantine_generation.store(generation + 2, std::memory_order_release);
    }

    // --- the 100 ms tick: readiness and the watchdog ---------------------------------

    void tick() {
        tick_.expires_after(100ms);
        tick_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            check_ready();
            if (config_.handler_timeout_s > 0) watchdog();
            tick();
        });
    }

    void check_ready() {
        bool all = true;
        for (unsigned i = 0; i < workers_.size(); ++i) {
            Worker& worker = workers_[i];
            bool ready = worker.pid != 0;
            for (unsigned t = 0; ready && t < config_.threads; ++t)
                ready = stats_.slots[i * config_.threads + t].ready.load() != 0;
            if (ready && !worker.announced) {
                worker.announced = true;
                if (announced_all_) {
                    const std::int64_t ready_ns = stats_.slots[i * config_.threads].ready_ns.load();
                    spdlog::info("worker {} (pid {}) replaced: serving {:.1f} ms after the old one was reaped", i,
                                 worker.pid, double(ready_ns - worker.died_ns) / 1e6);
                }
            }
            all = all && worker.announced;
        }
        if (all && !announced_all_) {
            announced_all_ = true;
            // Said once every worker has read the handlers folder: from here on, requests find them.
            spdlog::info("cspd listening on {}:{} with {} worker process(es) × {} event loop(s); handlers from {}, "
                         "static files from {}",
                         config_.bind_address, port_, workers_.size(), config_.threads,
                         config_.handlers_dir.string(), config_.www_dir.string());
        }
    }

    void watchdog() {
        const std::int64_t now = monotonic_now_ns();
        const std::int64_t limit = std::int64_t(config_.handler_timeout_s) * 1'000'000'000;
        for (unsigned i = 0; i < workers_.size(); ++i) {
            Worker& worker = workers_[i];
            if (!worker.pid) continue;
            if (worker.watchdog_fired) {
                // SIGABRT should have ended it; a handler that blocks or catches it gets SIGKILL.
                if (Clock::now() - worker.watchdog_at > 2s) ::kill(worker.pid, SIGKILL);
                continue;
            }
            for (unsigned t = 0; t < config_.threads; ++t) {
                LoopSlot& slot = stats_.slots[i * config_.threads + t];
                const std::int64_t started = slot.handler_started_ns.load();
                if (started == 0 || now - started < limit) continue;
                const std::uint32_t running = slot.running_handler.load();
                // The call may have ended and another begun between the two reads: look again next tick.
                if (slot.handler_started_ns.load(std::memory_order_acquire) != started) continue;
                VersionKey key;
                if (running > 0 && running <= kMaxTrackedHandlers) {
                    const VersionInfo info = snapshot(slot.handlers[running - 1].info);
                    key = {info.name, info.size, info.content_hash};
                }
                spdlog::error("watchdog: handler {} has been running for {:.1f} s in worker {} (pid {}), more than "
                              "--handler-timeout {} s; aborting the worker",
                              key.name.empty() ? "(untracked)" : key.name, double(now - started) * 1e-9, i,
                              worker.pid, config_.handler_timeout_s);
                worker.watchdog_fired = true;
                worker.watchdog_at = Clock::now();
                if (!key.name.empty()) count_crash(key);
                // Aimed at the stuck loop thread, so that the crash report's backtrace shows the handler.
                const pid_t tid = slot.thread_id.load();
                if (tid == 0 || ::syscall(SYS_tgkill, worker.pid, tid, SIGABRT) != 0) ::kill(worker.pid, SIGABRT);
                break;
            }
        }
    }

    // --- signals ---------------------------------------------------------------------

    void wait_for_signals() {
        signals_.async_wait([this](boost::system::error_code ec, int signal) {
            if (ec) return;
            if (stopping_ && signal != SIGQUIT) {
                wait_for_signals();
                return;
            }
            stopping_ = true;
            for (auto& timer : restart_timers_) timer.cancel();
            // Workers close their copies when they drain; closing ours lets the port go.
            for (int fd : listeners_) ::close(fd);
            listeners_.clear();
            if (status_listener_ >= 0) ::close(status_listener_);
            status_listener_ = -1;
            if (signal == SIGQUIT) {
                quitting_ = true;
                spdlog::info("SIGQUIT: stopping the workers now");
                signal_workers(SIGQUIT);
                deadline(2s);
            } else {
                spdlog::info("signal {}: draining the workers (up to {} s)", signal, config_.drain_timeout_s);
                signal_workers(SIGTERM);
                deadline(std::chrono::seconds(config_.drain_timeout_s) + 2s);
            }
            if (live_workers() == 0) finish();
            wait_for_signals();
        });
    }

    void deadline(Clock::duration after) {
        deadline_.expires_after(after);
        deadline_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            spdlog::error("workers still running past the deadline: killing them");
            exit_code_ = 1;
            signal_workers(SIGKILL);
        });
    }

    void wait_for_requests() {
        requests_.async_wait([this](boost::system::error_code ec, int signal) {
            if (ec) return;
            if (signal == SIGUSR1 && !config_.log_file.empty()) {
                try {
                    redirect_stderr_to(config_.log_file);
                    spdlog::info("SIGUSR1: reopened {}", config_.log_file.string());
                } catch (const std::exception& e) {
                    spdlog::error("SIGUSR1: {}; logging on to the old file", e.what());
                }
            }
            if (signal == SIGHUP) spdlog::info("SIGHUP: workers re-read the handlers folder");
            signal_workers(signal);
            wait_for_requests();
        });
    }

    void finish() {
        spdlog::info("cspd stopped");
        io_.stop();
    }

    const Config& config_;
    const std::vector<std::string>& argv_;
    asio::io_context io_;
    SharedStatsMapping shared_;
    SharedStats& stats_;
    std::vector<int> listeners_;
    int stats_fd_ = -1;
    int status_listener_ = -1;
    unsigned short port_ = 0;
    asio::signal_set signals_, requests_, children_;
    asio::steady_timer tick_, deadline_;
    std::vector<asio::steady_timer> restart_timers_;
    std::vector<Worker> workers_;
    std::map<VersionKey, std::deque<Clock::time_point>> crash_times_;
    bool stopping_ = false;
    bool quitting_ = false;
    bool announced_all_ = false;
    int exit_code_ = 0;
};

} // namespace

Master::Master(Config config, std::vector<std::string> argv) : config_(std::move(config)), argv_(std::move(argv)) {
    if (config_.threads == 0) config_.threads = 1;
}

int Master::run() {
    if (!std::filesystem::is_directory(config_.handlers_dir))
        throw std::runtime_error("handlers folder " + config_.handlers_dir.string() + " is not a folder");
    StaticFiles www(config_.www_dir);  // the same checks a worker makes, made once here: no crash loop over a typo
    if (config_.loops_total() > kMaxSlots)
        throw std::runtime_error("--workers × --threads is at most " + std::to_string(kMaxSlots));
    Supervisor supervisor(config_, argv_);
    return supervisor.run();
}

} // namespace cspd
