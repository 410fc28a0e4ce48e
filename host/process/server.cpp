#include "process/server.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "handler/host_services.hpp"
#include "handler/private_folders.hpp"
#include "process/certificate_check.hpp"
#include "process/certificate_watch.hpp"
#include "process/crash_reporter.hpp"
#include "process/key_keeper.hpp"
#include "process/privileges.hpp"
#include "process/sandbox.hpp"
#include "process/handler_supply.hpp"
#include "process/handler_vetting.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/log_file.hpp"
#include "process/service_notifier.hpp"
#include "process/shared_segments.hpp"
#include "routing/static_files.hpp"
#include "routing/tls_status.hpp"
#include "serving/access_log.hpp"
#include "serving/blocking_pool.hpp"
#include "serving/pubsub/topic_board.hpp"
#include "serving/pubsub/topic_relay.hpp"
#include "serving/event_loop.hpp"
#include "serving/listener.hpp"
#include "stats/shared_stats.hpp"
#include "tls/key_client.hpp"
#include "tls/ticket_keys.hpp"
#include "store/shared_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include <unistd.h>

namespace cspd {
namespace asio = boost::asio;

namespace {
using namespace std::chrono_literals;

LoopOptions loop_options(const Config& config, AccessLog* access_log, unsigned worker, ClientLimits* client_limits) {
    LoopOptions options;
    options.connection = config.connection;
    options.routing = {.probes = config.probes,
                       .status_endpoints = config.status_endpoints,
                       .status_port_only = !config.status_listen.empty(),
                       .retry_after_s = config.quarantine_window_s,
                       .request_id_header = config.request_id_header,
                       .reply_cache_bytes = config.cache_mib * 1024 * 1024 / config.threads,
                       .static_max_age_s = config.static_max_age_s,
                       .slow_call_warn_ms = config.slow_call_warn_ms,
                       .https_redirect_port = config.https_redirect ? config.tls_port.value_or(0)
                                                                    : static_cast<unsigned short>(0),
                       .compression = config.compression,
                       .client_limits = client_limits};
    options.max_connections = (config.max_connections + config.loops_total() - 1) / config.loops_total();
    options.access_log = access_log;
    options.proxy_protocol = config.proxy_protocol;
    options.worker = worker;
    return options;
}

std::unique_ptr<AccessLog> open_access_log(const Config& config) {
    if (config.access_log.empty()) return nullptr;
    return std::make_unique<AccessLog>(config.access_log, config.access_log_format);
}

/// The serving process, alone or as one of the master's workers. Set up in the constructor
/// (members in the order they depend on each other, torn down in reverse), then run(): the
/// first scan of the handlers folder, the loops' threads, and the control thread's signals,
/// timers and watcher events until a stop has drained.
class Worker {
public:
    Worker(const Config& config, std::optional<WorkerRole> role)
        : config_(config), role_(role), first_slot_(role ? role->first_slot : 0), www_(config.www_dir),
          shared_(shared_counters_for(config, role)), stats_(shared_.stats()), store_(shared_store_for(config, role)),
          clients_(client_table_for(config, role)), client_limits_(config.client_limits, clients_, first_slot_),
          // Before the loops: it outlives them, and its threads post into their inboxes.
          blocking_(config.blocking_threads, config.blocking_queue, &stats_.slots[first_slot_]),
          access_log_(open_access_log(config)),
          // Installed before the first (possibly slow) handler load, so an early SIGTERM still drains.
          signals_(control_, SIGINT, SIGTERM, SIGQUIT), requests_(control_, SIGHUP, SIGUSR1),
          keep_alive_(control_), stuck_check_(control_), drain_deadline_(control_) {
        claim_slots();
        host_services().store = store_ ? &*store_ : nullptr;
        host_services().client_limits = &client_limits_;
        host_services().log_rate = config_.handler_log_rate;
        host_services().cluster_redis = config_.cluster ? config_.cluster->address.text() : std::string();
        host_services().data_dir = config_.sandbox.data_dir;
        if (!config_.sandbox.data_dir.empty()) ::setenv(kDataDirVariable, config_.sandbox.data_dir.c_str(), 1);
        set_process_crash_flag(&stats_.slots[first_slot_].crashed_elsewhere);
        set_process_death_blame(&stats_.slots[first_slot_].blame);
        install_exit_blame();  // exit() in a handler's call is blamed on it
        make_loops();
        unblock_lifecycle_signals();  // before any loop thread starts: they inherit this mask
        if (config_.tls_port) {
            if (role_) {
                KeyClient::set_channel(config_.worker_fds().keys_channel());
                tickets_.emplace(TicketKeys::attach(config_.worker_fds().ticket_keys()));
            } else {
                keys_.emplace(control_, config_);  // alone, this process keeps its own key process
                KeyClient::set_channel(keys_->channel_for(0).release());
                tickets_.emplace(TicketKeys::create());
                rotate_tickets();
            }
            tickets_->serve_tickets();
            for (auto& loop : loops_) loop->attach_tls_status(tls_status_);
            certificates_.emplace(control_, loops_, tls_status_, config_.connection.http2.enabled);
        }
        if (!role_) give_up_root();  // a worker did before it got here
        private_folder_.emplace(private_folder_parent());  // as the account that runs handlers
        enter_file_rules_first();
        // Threads from here on: the file rules bind them.
        www_.watch();  // small files are kept in memory while nothing under www changes
        if (access_log_) access_log_->start();
        relay_topics();
        supply_.emplace(control_, config_, role_, stats_, first_slot_, loops_, private_folder_->path(),
                        [this](const std::string& name, const std::filesystem::path& file) {
                            return sandbox_refuses(name, file);
                        });
        enter_call_filter_last();
    }

    int run() {
        wait_for_stop();
        load_first_versions();
        if (certificates_) certificates_->start();
        start_loops();
        announce();
        wait_for_requests();
        if (config_.connection.handler_timeout_s > 0) check_stuck_calls();
        if (early_stop_) stop(early_stop_);
        // The watcher's events and the signal share this thread.
        while (!stopping_ && control_.run_one() > 0) {}
        return finish();
    }

private:
    // --- set-up --------------------------------------------------------------------------

    void claim_slots() {
        if (first_slot_ + config_.threads > kMaxSlots)
            throw std::runtime_error("at most " + std::to_string(kMaxSlots) + " event loops in all");
        if (role_) return;  // the master keeps a worker's slots
        // Alone: no master sweeps up after an earlier run of this process that was killed.
        if (const std::size_t left = remove_orphaned_private_folders())
            spdlog::info("removed {} private handler folder(s) that stopped processes left", left);
        stats_.slot_count.store(config_.threads);
        for (unsigned t = 0; t < config_.threads; ++t) {
            stats_.slots[t].pid.store(::getpid());
            stats_.slots[t].started_unix_ms.store(unix_now_ms());
        }
    }

    void make_loops() {
        port_ = config_.port;
        tls_port_ = config_.tls_port.value_or(0);
        const WorkerFds fds = config_.worker_fds();
        // Alone, the sockets are opened here, by bind address then loop (a worker is handed its
        // own, numbered so). With --port 0 the first socket picks the port and the rest join it;
        // with --tls-port 0 the HTTPS port is learned first: --https-redirect names it.
        const auto open_all = [&](unsigned short& chosen) {
            std::vector<int> sockets;
            for (unsigned b = 0; !role_ && b < fds.binds; ++b)
                for (unsigned t = 0; t < fds.threads; ++t) {
                    sockets.push_back(open_listener(config_.binds[b], chosen, t > 0));
                    chosen = bound_port(sockets.back());
                }
            return sockets;
        };
        const std::vector<int> tls_fds = config_.tls_port ? open_all(tls_port_) : std::vector<int>();
        const std::vector<int> plain_fds = open_all(port_);
        Config with_port = config_;
        with_port.tls_port = config_.tls_port ? std::optional<unsigned short>(tls_port_) : std::nullopt;
        LoopOptions options = loop_options(with_port, access_log_.get(), role_ ? role_->index : 0, &client_limits_);
        options.routing.trusted_proxies = &config_.trusted_proxies;  // config_ outlives the loops, with_port does not
        // csp_publish reaches this process's topics from any thread.
        TopicBoard::instance().set_max_message(config_.connection.websocket.max_message);
        Publisher::set_current(&TopicBoard::instance());
        for (unsigned t = 0; t < config_.threads; ++t) {
            loops_.push_back(std::make_unique<EventLoop>(first_slot_ + t, options, www_));
            loops_.back()->attach_blocking_pool(blocking_);
            for (unsigned b = 0; b < fds.binds; ++b) {
                loops_.back()->adopt_listener(role_ ? fds.listener(b, t) : plain_fds[b * fds.threads + t]);
                if (config_.tls_port)
                    loops_.back()->adopt_tls_listener(role_ ? fds.tls_listener(b, t) : tls_fds[b * fds.threads + t]);
            }
            loops_.back()->attach_stats(stats_, stats_.slots[first_slot_ + t]);
        }
        // Shared by every worker (operators' traffic is light); the first loop of each accepts on them.
        for (unsigned i = 0; i < fds.statuses; ++i) {
            int fd = role_ ? fds.status_listener(i) : -1;
            if (!role_) {
                const HostPort where = parse_host_port(config_.status_listen[i]);
                fd = open_listener(where.address, where.port);
                spdlog::info("/-/status and /metrics on {} only", listening_address(where.address, bound_port(fd)));
            }
            loops_.front()->adopt_status_listener(fd);
        }
    }

    /// Alone and started as root: the sockets and the key process are made, so handler code
    /// (loaded from here on) runs as --user or nobody. A key process restarted later runs as that
    /// user too and cannot read root's keys: a master keeps root for that.
    void give_up_root() {
        const WorkerAccount account = worker_account(config_, ::geteuid());
        say_who_runs_handlers(config_, account);
        if (!account.change) return;
        check_workers_can_read(config_, account);
        hand_over(config_.log_file, account);
        hand_over(config_.access_log, account);
        become(account);
    }

    /// Publishes reach the other workers' subscribers, and theirs reach this one's; with
    /// --cluster, through the master, every other host's too. (Its threads start here.)
    void relay_topics() {
        if (!role_ || (config_.workers <= 1 && !config_.cluster)) return;
        TopicRelay::Receivers receivers;
        receivers.deliver = [](std::string_view topic, std::string_view data, bool binary) {
            TopicBoard::instance().deliver_here(topic, data, binary);
        };
        receivers.gap = [](std::string_view topic) { TopicBoard::instance().gap_here(topic); };
        relay_ = std::make_unique<TopicRelay>(role_->master, role_->index, config_.workers, config_.cluster.has_value(),
                                              std::move(receivers));
        relay_->trust_workers_listed_in(stats_);  // /proc of other processes is closed to a sandboxed worker
        if (config_.cluster) relay_->bound_cluster_queue(stats_, first_slot_, config_.cluster->queue_bytes);
        TopicBoard::instance().set_relay(relay_.get());
    }

    /// The sandbox's file rules (process/sandbox) bind the thread that enters them and those it
    /// starts later: this one, before its first other thread. The sockets, the key process (alone)
    /// and the change of account come before; handler code after.
    void enter_file_rules_first() {
        if (!config_.sandbox.enabled) return;
        // The compiler's and the handlers' temporary files (and, by default, spilled uploads) go
        // to this process's private folder: /tmp is not theirs to write.
        ::setenv("TMPDIR", private_folder_->path().c_str(), 1);
        if (const std::size_t threads = threads_running(); threads > 1)
            spdlog::warn("sandbox: {} threads run already; the file rules bind only this one and those it starts",
                         threads);
        const std::int64_t began = monotonic_now_ns();
        sandbox_.emplace(serving_policy(config_, private_folder_->path()));
        for (unsigned t = 0; t < config_.threads; ++t)  // for /-/status, before the slots are ready
            copy_text(stats_.slots[first_slot_ + t].sandbox_declared, sizeof stats_.slots[0].sandbox_declared,
                      sandbox_->declared.describe());
        const std::int64_t planned = monotonic_now_ns();
        enter_file_rules(config_, *sandbox_, stats_.sandbox);
        spdlog::debug("sandbox: {} file rules planned in {:.1f} ms, entered in {:.1f} ms",
                      sandbox_->rules.read.size() + sandbox_->rules.run.size() + sandbox_->rules.write.size() +
                          sandbox_->rules.append.size(),
                      (planned - began) / 1e6, (monotonic_now_ns() - planned) / 1e6);
    }

    /// The vetting fork server starts inside the file rules (which let this process signal it)
    /// and before the call filter (which denies starting programs), then the filter binds every thread.
    void enter_call_filter_last() {
        if (!config_.sandbox.enabled) return;
        const std::int64_t began = monotonic_now_ns();
        std::string error;
        if (!supply_->start_vetting(vetting_call_filter(config_.sandbox, *sandbox_), error))
            spdlog::error("sandbox: {} (new versions are vetted by a process started afresh, if the sandbox lets it)",
                          error);
        enter_call_filter(config_, *sandbox_, &stats_.sandbox_denials, stats_.sandbox);
        spdlog::debug("sandbox: vetting fork server and call filter in {:.1f} ms", (monotonic_now_ns() - began) / 1e6);
        if (!sandbox_->exec && role_)
            // No new fork server can start under the filter: a fresh worker brings one.
            supply_->when_vetting_is_lost([this] {
                stats_.slots[first_slot_].wants_successor.store(kSuccessorVettingLost, std::memory_order_release);
                return std::string("it cannot be vetted here (this worker's vetting fork server is gone, and its "
                                   "sandbox denies starting another): a successor worker starts");
            });
    }

    /// Why this process cannot take handler `name` under its sandbox (it declared more than the
    /// handlers did when this process started); empty if it can. A worker asks the master for
    /// successors, which start with the wider sandbox and load it.
    std::string sandbox_refuses(const std::string& name, const std::filesystem::path& file) {
        if (!sandbox_ || config_.sandbox.log_only) return {};
        bool grantable = false;
        const std::string missing = sandbox_->refuses(config_.handlers_dir, name, file, grantable);
        if (missing.empty() || !grantable) return missing;
        if (!role_) return "it asks for " + missing + ", beyond this process's sandbox: restart cspd to widen it";
        stats_.slots[first_slot_].wants_successor.store(kSuccessorWiderSandbox, std::memory_order_release);
        return "it asks for " + missing + ", beyond this worker's sandbox: workers with a wider one are starting";
    }

    static std::size_t threads_running() {
        std::error_code ec;
        std::size_t count = 0;
        for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec))
            ++count;
        return count;
    }

    /// Alone, this process rotates its session ticket keys (a master does for its workers).
    void rotate_tickets() {
        ticket_rotation_.expires_after(std::chrono::seconds(TicketKeys::kRotateEverySeconds));
        ticket_rotation_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            tickets_->rotate();
            rotate_tickets();
        });
    }

    // --- running -------------------------------------------------------------------------

    /// The loops start once the handlers found now are loaded or refused (their vetting runs on
    /// this thread meanwhile): no request meets a 404 for one of them. A stop that comes before
    /// is kept, and acted on once the loops run. A worker replacing one that served does not wait
    /// for a version being vetted: the connections queued on its socket would (what the server
    /// kept serves in its place).
    void load_first_versions() {
        bool settled = false;
        const bool replacing = role_ && stats_.serving.load(std::memory_order_acquire) != 0;
        supply_->start([&settled] { settled = true; }, !replacing);
        while (!settled && !early_stop_ && control_.run_one() > 0) {}
    }

    void start_loops() {
        for (auto& loop : loops_) threads_.emplace_back([&loop] { loop->run(); });
        for (unsigned t = 0; t < config_.threads; ++t) {
            stats_.slots[first_slot_ + t].ready_ns.store(monotonic_now_ns());
            stats_.slots[first_slot_ + t].ready.store(1);
        }
    }

    /// Only a process that is the service speaks to its manager: a worker's master does.
    void announce() {
        if (role_) {
            spdlog::info("worker {} (pid {}) serving with {} event loop(s)", role_->index, ::getpid(), loops_.size());
            return;
        }
        spdlog::info("cspd listening on {}{} with {} event loop(s) in one process (no supervision); handlers "
                     "from {}, static files from {}",
                     listening_addresses(config_.binds, port_), config_.tls_port ? fmt::format(" (HTTPS on {})", tls_port_) : "",
                     loops_.size(), config_.handlers_dir.string(), config_.www_dir.string());
        notifier_.emplace();
        notifier_->ready(fmt::format("serving on {} with {} loop(s), one process", listening_addresses(config_.binds, port_),
                                     loops_.size()));
        if (notifier_->watchdog_interval().count()) keep_service_alive();
    }

    void keep_service_alive() {
        notifier_->keep_alive(ServiceNotifier::Clock::now());
        keep_alive_.expires_after(notifier_->watchdog_interval());
        keep_alive_.async_wait([this](boost::system::error_code ec) {
            if (!ec) keep_service_alive();
        });
    }

    void wait_for_stop() {
        signals_.async_wait([this](boost::system::error_code ec, int signal) {
            if (ec) return;
            if (threads_.empty())
                early_stop_ = signal;  // the loops do not run yet
            else
                stop(signal);
        });
    }

    void wait_for_requests() {
        requests_.async_wait([this](boost::system::error_code ec, int signal) {
            if (ec) return;
            if (signal == SIGHUP) {
                spdlog::info("SIGHUP: re-reading the handlers folder");
                supply_->rescan();
            } else {
                if (!config_.log_file.empty()) reopen_log_file(config_.log_file);
                if (access_log_) access_log_->reopen();
            }
            wait_for_requests();
        });
    }

    /// Blocking calls that never come back: once they hold every thread of the pool, this worker
    /// can serve no blocking handler again, so it drains and the master starts a fresh one.
    void check_stuck_calls() {
        stuck_check_.expires_after(1s);
        stuck_check_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            const unsigned stuck = blocking_.stuck(std::chrono::seconds(config_.connection.handler_timeout_s));
            if (stuck < blocking_.threads()) return check_stuck_calls();
            if (role_) {
                spdlog::error("all {} blocking-handler threads are stuck in calls longer than --handler-timeout {} s; "
                              "replacing this worker",
                              stuck, config_.connection.handler_timeout_s);
                ::kill(::getpid(), SIGTERM);
            } else {
                spdlog::error("all {} blocking-handler threads are stuck in calls longer than --handler-timeout {} s; "
                              "blocking handlers get 503 until they return (no master to replace this process)",
                              stuck, config_.connection.handler_timeout_s);
                check_stuck_calls();
            }
        });
    }

    /// SIGQUIT stops at once; SIGINT and SIGTERM drain, for --drain-timeout at most.
    void stop(int signal) {
        stopping_ = true;
        requests_.cancel();
        stuck_check_.cancel();
        if (certificates_) certificates_->stop();
        if (keys_) keys_->stop();
        ticket_rotation_.cancel();
        keep_alive_.cancel();
        if (notifier_)
            notifier_->stopping(signal == SIGQUIT ? "stopping now (SIGQUIT)"
                                                  : fmt::format("draining (up to {} s)", config_.drain_timeout_s));
        if (signal == SIGQUIT) {
            spdlog::info("SIGQUIT: stopping now");
            for (auto& loop : loops_) loop->stop();
            supply_->stop();
            return;
        }
        spdlog::info("signal {}: draining (up to {} s)", signal, config_.drain_timeout_s);
        for (auto& loop : loops_)  // first: stopping the watcher may wait for a compiler
            loop->begin_drain(std::chrono::seconds(config_.drain_timeout_s));
        supply_->stop();
        drain_deadline_.expires_after(std::chrono::seconds(config_.drain_timeout_s));
        drain_deadline_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            spdlog::warn("drain timeout: closing the remaining connections");
            for (auto& loop : loops_) loop->stop();
        });
    }

    /// Waits for the loops to end (the drain deadline still runs), then tears down in order.
    int finish() {
        std::thread deadline_thread([this] { control_.run(); });
        for (auto& thread : threads_) thread.join();
        control_.stop();
        deadline_thread.join();

        // The pool first: its calls post into the loops, which must still exist (they no longer run).
        const bool pool_stopped = blocking_.stop(1s);
        supply_->clear();
        if (!pool_stopped) {
            // A blocking call that never returned still runs handler code: nothing may be torn down
            // under it (static destructors, the library), so the process ends here.
            spdlog::error("{} blocking handler call(s) never returned; exiting without cleanup",
                          blocking_.stuck(std::chrono::seconds(0)));
            spdlog::shutdown();
            ::_exit(0);
        }
        loops_.clear();  // drops the last references: cleanup hooks run, libraries unload
        // No handler code is left to publish: the relay can go.
        TopicBoard::instance().set_relay(nullptr);
        relay_.reset();
        if (role_)
            spdlog::info("worker {} (pid {}) stopped", role_->index, ::getpid());
        else
            spdlog::info("cspd stopped");
        return 0;
    }

    const Config& config_;
    const std::optional<WorkerRole> role_;
    std::unique_ptr<TopicRelay> relay_;  // with more than one worker: topics across them
    const unsigned first_slot_;
    StaticFiles www_;
    SharedStatsMapping shared_;
    SharedStats& stats_;
    std::optional<SharedStore> store_;
    ClientTable clients_;
    ClientLimits client_limits_;  // over clients_, for every loop and csp_limit
    BlockingPool blocking_;
    std::unique_ptr<AccessLog> access_log_;  // before the loops: they hand it their lines to the end
    TlsStatusBoard tls_status_;              // before the loops: they read it for /-/status
    std::vector<std::unique_ptr<EventLoop>> loops_;
    unsigned short port_ = 0;
    unsigned short tls_port_ = 0;
    asio::io_context control_;  // this thread's: signals, timers, the watcher, vetting
    asio::signal_set signals_, requests_;
    std::optional<SandboxPolicy> sandbox_;         // what this process entered (none: --no-sandbox)
    std::optional<PrivateFolder> private_folder_;  // copies of handler files, temporary files; before supply_
    std::optional<HandlerSupply> supply_;
    std::optional<KeyKeeper> keys_;
    std::optional<TicketKeys> tickets_;
    std::optional<CertificateWatch> certificates_;
    std::vector<std::thread> threads_;
    std::optional<ServiceNotifier> notifier_;
    asio::steady_timer keep_alive_, stuck_check_, drain_deadline_, ticket_rotation_{control_};
    int early_stop_ = 0;  // a stop signal that came before the loops ran
    bool stopping_ = false;
};

}  // namespace

Server::Server(Config config, std::optional<WorkerRole> role) : config_(std::move(config)), role_(role) {}

int Server::run() {
    if (!std::filesystem::is_directory(config_.handlers_dir))
        throw std::runtime_error("handlers folder " + config_.handlers_dir.string() + " is not a folder");
    // Only the key process reads it: a worker (which may not even see it) leaves it to the master.
    if (!role_) check_certificates(config_);
    return Worker(config_, role_).run();
}

}  // namespace cspd
