#include "process/master.hpp"

#include "common/clocks.hpp"
#include "handler/private_folders.hpp"
#include "process/certificate_check.hpp"
#include "process/key_keeper.hpp"
#include "process/privileges.hpp"
#include "tls/ticket_keys.hpp"
#include "process/crash_ledger.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/log_file.hpp"
#include "process/server_folder.hpp"
#include "process/service_notifier.hpp"
#include "process/shared_segments.hpp"
#include "process/slot_banks.hpp"
#include "process/topic_hub.hpp"
#include "process/watchdog.hpp"
#include "process/worker_record.hpp"
#include "process/worker_role.hpp"
#include "serving/access_log.hpp"
#include "serving/listener.hpp"
#include "process/worker_spawner.hpp"
#include "process/worker_succession.hpp"
#include "routing/static_files.hpp"
#include "stats/shared_stats.hpp"
#include "store/shared_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

class Supervisor {
public:
    Supervisor(const Config& config, const std::vector<std::string>& argv, WorkerAccount account)
        : config_(config), account_(std::move(account)), shared_(shared_counters_for(config)), stats_(shared_.stats()), store_(shared_store_for(config)),
          clients_(client_table_for(config)),
          spawner_(WorkerSpawner::open(config, argv, shared_, store_, clients_, port_, tls_port_)),
          ledger_(stats_, config.quarantine_crashes, std::chrono::seconds(config.quarantine_window_s)),
          watchdog_(config.connection.handler_timeout_s, ledger_), banks_(stats_, config.workers, config.threads),
          succession_(config, workers_, banks_, ledger_,
                      [this](unsigned index, unsigned bank) { return start_process(index, bank); }),
          signals_(io_, SIGINT, SIGTERM, SIGQUIT),
          requests_(io_, SIGHUP, SIGUSR1), children_(io_, SIGCHLD), tick_(io_), deadline_(io_) {
        if (config_.tls_port) {
            keys_.emplace(io_, config_);
            tickets_.emplace(TicketKeys::create());
            tickets_fd_ = WorkerSpawner::above_worker_fds(UniqueFd(::fcntl(tickets_->fd(), F_DUPFD_CLOEXEC, 0)),
                                                          config_.worker_fds());
        }
        workers_.resize(config_.workers);
        if (config_.rollback && !config_.server_folder.empty())
            ledger_.roll_back_to(rollback_targets_in(config_.server_folder));
        restart_timers_.reserve(config_.workers);
        for (unsigned i = 0; i < config_.workers; ++i) restart_timers_.emplace_back(io_);
    }

    int run() {
        unblock_lifecycle_signals();  // the signal_sets exist: from here on signals are handled
        // Workers of an earlier run that was killed (or crashed) left their folders behind.
        if (const std::size_t left = remove_orphaned_private_folders())
            spdlog::info("removed {} private handler folder(s) that stopped processes left under {}", left,
                         private_folder_parent().string());
        wait_for_signals();
        wait_for_requests();
        wait_for_children();
        // Before the workers: their first publishes find the master's relay there.
        if (config_.cluster) topics_.emplace(io_, *config_.cluster, config_.workers, stats_);
        for (unsigned i = 0; i < workers_.size(); ++i) spawn(i);
        tick();
        io_.run();
        return exit_code_;
    }

private:
    LoopSlot* slots_of(unsigned index, unsigned bank) { return banks_.slots(index, bank); }
    LoopSlot* slots_of(unsigned index) { return slots_of(index, workers_[index].bank); }

    // --- workers ---------------------------------------------------------------------

    void spawn(unsigned index) {
        const pid_t pid = start_process(index, workers_[index].bank);
        if (pid < 0) return;
        WorkerRecord& worker = workers_[index];
        worker.pid = pid;
        worker.started = Clock::now();
        worker.watchdog = {};
        worker.announced = false;
    }

    /// Starts worker `index`'s process writing slot bank `bank`; -1 if it cannot be (retried).
    pid_t start_process(unsigned index, unsigned bank) {
        if (stopping_) return -1;
        // The slots are reset before the worker exists: it may mark itself ready before posix_spawn returns.
        banks_.prepare_for_start(index, bank);
        clients_.forget_holder(banks_.first_slot(index, bank));  // a holder that died unseen counts nothing
        LoopSlot* slots = slots_of(index, bank);
        int error = 0;
        UniqueFd keys_channel;
        if (keys_)
            if (UniqueFd channel = keys_->channel_for(index))
                keys_channel = WorkerSpawner::above_worker_fds(std::move(channel), config_.worker_fds());
        const pid_t pid =
            spawner_.spawn(index, banks_.first_slot(index, bank), error, keys_channel.get(), tickets_fd_.get());
        if (pid < 0) {
            spdlog::error("cannot start worker {}: {}; trying again in 1 s", index, std::strerror(error));
            if (bank == workers_[index].bank) schedule_spawn(index, 1s);
            return -1;
        }
        for (unsigned t = 0; t < config_.threads; ++t) slots[t].pid.store(pid);
        if (topics_) topics_->process_started(pid);
        spdlog::debug("worker {} started as pid {}", index, pid);
        return pid;
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
            // Its private handler folder goes with it (a clean exit has removed it already).
            if (const std::size_t left = remove_private_folders_of(pid))
                spdlog::debug("removed {} private folder(s) pid {} left behind", left, pid);
            if (topics_) topics_->process_gone(pid);  // the topics it subscribed to across hosts
            if (succession_.reaped(pid, status)) continue;
            if (keys_ && keys_->reaped(pid, status)) continue;
            for (unsigned i = 0; i < workers_.size(); ++i)
                if (workers_[i].pid == pid) on_worker_exit(i, status);
        }
        if (stopping_ && live_workers() == 0) finish();
    }

    void on_worker_exit(unsigned index, int status) {
        WorkerRecord& worker = workers_[index];
        const pid_t pid = worker.pid;
        worker.pid = 0;
        worker.died_ns = monotonic_now_ns();
        LoopSlot* slots = slots_of(index);
        const std::vector<Blamed> blamed = blame_for_death(slots, config_.threads, status);
        banks_.mark_dead(index, worker.bank);
        // What its connections held in the client table goes with it, however it died.
        clients_.forget_holder(banks_.first_slot(index, worker.bank));
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (stopping_) {
            // A worker that could not stop cleanly makes the whole stop unclean: say so in the exit code.
            if (!clean && !quitting_) exit_code_ = 1;
            spdlog::log(clean ? spdlog::level::info : spdlog::level::err, "worker {} (pid {}) {}", index, pid,
                        describe_exit(status));
            return;
        }
        spdlog::log(clean ? spdlog::level::warn : spdlog::level::err, "worker {} (pid {}) {}{}; starting a replacement",
                    index, pid, describe_exit(status),
                    blamed.empty() ? ""
                                   : std::string(" while handler ") + blamed.front().key.name + " was running, " +
                                         phase_text(blamed.front().phase));
        if (!worker.watchdog.fired) ledger_.charge(blamed);  // the watchdog has already counted its own kill

        bump(stats_.worker_restarts);
        for (unsigned t = 0; t < config_.threads; ++t) slots[t].restarts.fetch_add(1);
        if (succession_.take_over_after_death(index)) return;  // a successor was starting: nothing else starts
        // A death blamed on a handler restarts at once: that handler is fenced or counted toward its
        // quarantine, so one handler's faults never keep a listener waiting. Back-off is for deaths
        // nobody can be blamed for (a worker that cannot start).
        const Clock::duration delay =
            blamed.empty() ? worker.backoff.after_death(worker.started) : Clock::duration::zero();
        if (delay != Clock::duration::zero())
            spdlog::warn("worker {} keeps dying ({} times in a row); next start in {} ms", index,
                         worker.backoff.quick_deaths(),
                         std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
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

    // --- the 100 ms tick: readiness and the watchdog ---------------------------------

    void tick() {
        tick_.expires_after(100ms);
        tick_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            succession_.tick(stopping_);
            if (topics_) topics_->report();
            if (tickets_ && ++ticket_ticks_ % (TicketKeys::kRotateEverySeconds * 10) == 0) tickets_->rotate();
            check_ready();
            // The service manager's watchdog: alive while at least one worker serves.
            if (!stopping_ && any_worker_serving()) notifier_.keep_alive(Clock::now());
            if (watchdog_.enabled())
                for (unsigned i = 0; i < workers_.size(); ++i)
                    if (workers_[i].pid)
                        watchdog_.check(i, workers_[i].pid, slots_of(i), config_.threads, workers_[i].watchdog);
            // Copies of versions no worker serves or may roll back to any more, now and then.
            if (++ticks_ % kSweepTicks == 0 && !config_.server_folder.empty())
                sweep_server_folder(config_.server_folder, kSweepAge);
            tick();
        });
    }

    void check_ready() {
        bool all = true;
        for (unsigned i = 0; i < workers_.size(); ++i) {
            WorkerRecord& worker = workers_[i];
            bool ready = worker.pid != 0;
            for (unsigned t = 0; ready && t < config_.threads; ++t)
                ready = slots_of(i)[t].ready.load() != 0;
            if (ready && !worker.announced) {
                worker.announced = true;
                if (announced_all_) {
                    const std::int64_t ready_ns = slots_of(i)[0].ready_ns.load();
                    spdlog::info("worker {} (pid {}) replaced: serving {:.1f} ms after the old one was reaped", i,
                                 worker.pid, double(ready_ns - worker.died_ns) / 1e6);
                }
            }
            all = all && worker.announced;
        }
        if (all && !announced_all_ && !stopping_) {
            announced_all_ = true;
            stats_.serving.store(1, std::memory_order_release);
            // Said once every worker has read the handlers folder: from here on, requests find them.
            spdlog::info("cspd listening on {}{} with {} worker process(es) × {} event loop(s); handlers from {}, "
                         "static files from {}",
                         listening_addresses(config_.binds, port_),
                         config_.tls_port ? fmt::format(" (HTTPS on {})", tls_port_) : std::string(), workers_.size(),
                         config_.threads, config_.handlers_dir.string(), config_.www_dir.string());
            notifier_.ready(fmt::format("serving on {} with {} worker(s) × {} loop(s)", listening_addresses(config_.binds, port_),
                                        workers_.size(), config_.threads));
        }
    }

    bool any_worker_serving() const {
        for (unsigned i = 0; i < workers_.size(); ++i)
            if (workers_[i].pid && workers_[i].announced) return true;
        return false;
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
            if (keys_) keys_->stop();
            for (auto& timer : restart_timers_) timer.cancel();
            // Workers close their copies when they drain; closing ours lets the port go.
            spawner_.close_listeners();
            if (signal == SIGQUIT) {
                quitting_ = true;
                spdlog::info("SIGQUIT: stopping the workers now");
                notifier_.stopping("stopping now (SIGQUIT)");
                signal_workers(SIGQUIT);
                deadline(2s);
            } else {
                spdlog::info("signal {}: draining the workers (up to {} s)", signal, config_.drain_timeout_s);
                notifier_.stopping(fmt::format("draining (up to {} s)", config_.drain_timeout_s));
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
            if (signal == SIGUSR1) {
                // Reopened (and made) here first, as root, then given to the workers' account: a
                // rotated log's new file is theirs to open.
                if (!config_.log_file.empty()) reopen_log_file(config_.log_file);
                hand_over(config_.log_file, account_);
                if (!config_.access_log.empty() && account_.change) {
                    try {
                        AccessLog::check(config_.access_log);
                    } catch (const std::exception& e) {
                        spdlog::error("SIGUSR1: {}", e.what());
                    }
                    hand_over(config_.access_log, account_);
                }
            }
            if (signal == SIGHUP) spdlog::info("SIGHUP: workers re-read the handlers folder");
            signal_workers(signal);
            // A successor starting now has read the folder, or its logs, already: it hears it too.
            for (const auto& w : workers_)
                if (w.successor) ::kill(w.successor, signal);
            wait_for_requests();
        });
    }

    void finish() {
        // From here on a late SIGTERM (a supervisor repeating itself) must not kill the exit with
        // its default action once the signal sets are gone: it stays pending, blocked.
        block_lifecycle_signals();
        spdlog::info("cspd stopped");
        io_.stop();
    }

    const Config& config_;
    const WorkerAccount account_;
    ServiceNotifier notifier_;
    asio::io_context io_;
    SharedStatsMapping shared_;
    SharedStats& stats_;
    std::optional<SharedStore> store_;  // every worker maps it: it outlives their restarts
    ClientTable clients_;  // the same
    unsigned short port_ = 0;
    unsigned short tls_port_ = 0;
    WorkerSpawner spawner_;
    CrashLedger ledger_;
    Watchdog watchdog_;
    std::vector<WorkerRecord> workers_;  // before succession_, which holds it
    SlotBanks banks_;
    WorkerSuccession succession_;
    std::optional<KeyKeeper> keys_;  // with --tls-port: the only process that holds private keys
    std::optional<TicketKeys> tickets_;  // with --tls-port: shared by every worker, rotated here
    UniqueFd tickets_fd_;                // its copy above the workers' descriptor numbers
    std::uint64_t ticket_ticks_ = 0;
    asio::signal_set signals_, requests_, children_;
    asio::steady_timer tick_, deadline_;
    std::vector<asio::steady_timer> restart_timers_;
    std::optional<TopicHub> topics_;  // with --cluster: the host's link to the other hosts' topics
    bool stopping_ = false;
    bool quitting_ = false;
    bool announced_all_ = false;
    int exit_code_ = 0;
    std::uint64_t ticks_ = 0;
    static constexpr std::uint64_t kSweepTicks = 100;     // 10 s
    static constexpr std::chrono::seconds kSweepAge{60};  // a copy younger than this may be about to be named
};

}  // namespace

Master::Master(Config config, std::vector<std::string> argv) : config_(std::move(config)), argv_(std::move(argv)) {}

int Master::run() {
    if (!std::filesystem::is_directory(config_.handlers_dir))
        throw std::runtime_error("handlers folder " + config_.handlers_dir.string() + " is not a folder");
    if (!config_.access_log.empty()) AccessLog::check(config_.access_log);  // here, not in a crash loop of workers
    const WorkerAccount account = worker_account(config_, ::geteuid());
    say_who_runs_handlers(config_, account);
    check_workers_can_read(config_, account);  // here, rather than in workers that die at start over and over
    check_certificates(config_);  // before anything listens: HTTPS that cannot serve does not start
    StaticFiles www(config_.www_dir);  // the same checks a worker makes, made once here: no crash loop over a typo
    if (config_.loops_total() > kMaxSlots)
        throw std::runtime_error("--workers × --threads is at most " + std::to_string(kMaxSlots));
    // Where workers keep handler versions that must outlive them (handler/kept_versions).
    PrivateFolder server_folder;
    config_.server_folder = server_folder.path();
    argv_.insert(argv_.end(), {"--server-folder", server_folder.path().string()});
    // What workers write or reopen as their own user.
    hand_over(server_folder.path(), account);
    hand_over(config_.log_file, account);
    hand_over(config_.access_log, account);
    if (account.change) sweep_folders_of_user(account.uid);
    Supervisor supervisor(config_, argv_, account);
    return supervisor.run();
}

}  // namespace cspd
