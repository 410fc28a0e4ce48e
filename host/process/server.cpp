#include "process/server.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "handler/compiler.hpp"
#include "handler/kept_versions.hpp"
#include "handler/loader.hpp"
#include "handler/private_folders.hpp"
#include "handler/registry.hpp"
#include "handler/watcher.hpp"
#include "process/crash_reporter.hpp"
#include "process/handler_vetting.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/log_file.hpp"
#include "process/service_notifier.hpp"
#include "routing/static_files.hpp"
#include "store/shared_store.hpp"
#include "handler/host_services.hpp"
#include "serving/blocking_pool.hpp"
#include "serving/event_loop.hpp"
#include "serving/listener.hpp"
#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>

#include <unistd.h>

namespace cspd {
namespace asio = boost::asio;

namespace {
LoopOptions loop_options(const Config& config) {
    LoopOptions options;
    options.connection = {config.max_head_bytes,    config.max_body_bytes,    config.keepalive_timeout_s,
                          config.header_timeout_s,  config.handler_timeout_s, config.pending_timeout_s,
                          config.body_memory_bytes, config.upload_dir,      config.min_body_rate};
    options.routing = {config.probes, config.status_endpoints, !config.status_listen.empty(),
                       config.quarantine_window_s, config.request_id_header, config.cache_mib * 1024 * 1024 / config.threads,
                       config.static_max_age_s, config.slow_call_warn_ms};
    options.max_connections = (config.max_connections + config.loops_total() - 1) / config.loops_total();
    return options;
}

}  // namespace

Server::Server(Config config, std::optional<WorkerRole> role) : config_(std::move(config)), role_(role) {}

int Server::run() {
    if (!std::filesystem::is_directory(config_.handlers_dir))
        throw std::runtime_error("handlers folder " + config_.handlers_dir.string() + " is not a folder");
    StaticFiles www(config_.www_dir);
    www.watch();  // small files are kept in memory while nothing under www changes

    // Alone, this process makes its own counters and sockets; a worker gets them from its master.
    SharedStatsMapping shared = role_ ? SharedStatsMapping::attach(WorkerRole::kStatsFd)
                                       : SharedStatsMapping::create(config_.max_handlers);
    SharedStats& stats = shared.stats();
    const unsigned first_slot = role_ ? role_->first_slot : 0;
    if (first_slot + config_.threads > kMaxSlots)
        throw std::runtime_error("at most " + std::to_string(kMaxSlots) + " event loops in all");
    if (!role_) {
        // Alone: no master sweeps up after an earlier run of this process that was killed.
        if (const std::size_t left = remove_orphaned_private_folders())
            spdlog::info("removed {} private handler folder(s) that stopped processes left", left);
        stats.slot_count.store(config_.threads);
        for (unsigned t = 0; t < config_.threads; ++t) {
            stats.slots[t].pid.store(::getpid());
            stats.slots[t].started_unix_ms.store(unix_now_ms());
        }
    }

    // The store all workers share: the master's, or this process's own when it is alone.
    std::optional<SharedStore> store;
    if (config_.kv_entries) {
        const StoreLimits limits{config_.kv_entries, config_.kv_value_max, config_.kv_quota_percent};
        store.emplace(role_ ? SharedStore::attach(WorkerRole::kStoreFd, limits) : SharedStore::create(limits));
    }
    host_services().store = store ? &*store : nullptr;
    host_services().log_rate = config_.handler_log_rate;

    set_process_crash_flag(&stats.slots[first_slot].crashed_elsewhere);
    set_process_death_blame(&stats.slots[first_slot].blame);
    install_exit_blame();  // exit() in a handler's call is blamed on it
    // Declared before the loops: it outlives them, and its threads post into their inboxes.
    BlockingPool blocking(config_.blocking_threads, config_.blocking_queue, &stats.slots[first_slot]);
    std::vector<std::unique_ptr<EventLoop>> loops;
    unsigned short port = config_.port;
    const LoopOptions options = loop_options(config_);
    for (unsigned t = 0; t < config_.threads; ++t) {
        loops.push_back(std::make_unique<EventLoop>(first_slot + t, options, www));
        loops.back()->attach_blocking_pool(blocking);
        int fd = role_ ? WorkerRole::kFirstListenerFd + static_cast<int>(t) : open_listener(config_.bind_address, port);
        // With --port 0 the first loop learns the port; the others join it.
        if (!role_) port = bound_port(fd);
        loops.back()->adopt_listener(fd);
        loops.back()->attach_stats(stats, stats.slots[first_slot + t]);
    }

    if (!config_.status_listen.empty()) {
        // Shared by every worker (operators' traffic is light); the first loop of each accepts on it.
        int fd = role_ ? WorkerRole::kFirstListenerFd + static_cast<int>(config_.threads) : -1;
        if (!role_) {
            const HostPort where = parse_host_port(config_.status_listen);
            fd = open_listener(where.address, where.port);
            spdlog::info("/-/status and /metrics on {}:{} only", where.address, bound_port(fd));
        }
        loops.front()->adopt_status_listener(fd);
    }

    asio::io_context control;
    // Installed before the first (possibly slow) handler load, so an early SIGTERM still drains.
    asio::signal_set signals(control, SIGINT, SIGTERM, SIGQUIT);
    asio::signal_set requests(control, SIGHUP, SIGUSR1);
    unblock_lifecycle_signals();  // before any thread starts: they inherit this mask
    HandlerLoader loader(private_folder_parent(), config_.strict_handler_modes);
    const unsigned workers = std::max(1u, config_.workers);
    loader.set_worker(role_ ? role_->index : 0, workers);
    // Each new version is tried in a short-lived process before this one loads it (unless
    // --no-vetting), and none the master has fenced is loaded.
    HandlerVetting vetting(control, std::chrono::seconds(config_.init_timeout_s), &stats, config_.vet_handlers,
                           workers, role_ ? config_.server_folder : std::filesystem::path());
    // The master times loads and inits (--init-timeout): one that passed vetting may still hang here.
    LoopSlot& first = stats.slots[first_slot];
    loader.on_phase([&first](HandlerPhase phase, const HandlerLabel& label) {
        if (phase == HandlerPhase::none) {
            first.loading_since_ns.store(0, std::memory_order_release);
            return;
        }
        first.loading_since_ns.store(0, std::memory_order_relaxed);
        copy_text(first.loading.name, sizeof first.loading.name, label.name);
        first.loading.size = label.size;
        first.loading.content_hash = label.content_hash;
        first.loading.phase.store(static_cast<std::uint32_t>(phase), std::memory_order_relaxed);
        first.loading_since_ns.store(monotonic_now_ns(), std::memory_order_release);
    });
    HandlerRegistry registry;
    for (auto& loop : loops) {
        EventLoop* target = loop.get();
        const bool counts = loop == loops.front();  // one count per process, not per loop
        registry.subscribe([target, counts](const std::string& name, std::shared_ptr<const HandlerVersion> version) {
            target->post([target, name, counts, version = std::move(version)]() mutable {
                target->set_handler(name, std::move(version), counts);
            });
        });
        registry.subscribe_refusals([target, counts](const std::string& name, const std::string& reason) {
            target->post([target, name, reason, counts] { target->handlers().note_refusal(name, reason, counts); });
        });
        registry.subscribe_fallbacks([target](const std::string& name, std::shared_ptr<const HandlerVersion> fallback) {
            target->post([target, name, fallback = std::move(fallback)]() mutable {
                target->handlers().set_fallback(name, std::move(fallback));
            });
        });
        registry.subscribe_vetting([target](const std::string& name, bool started) {
            target->post([target, name, started] { target->handlers().note_vetting(name, started); });
        });
    }
    std::unique_ptr<HandlerCompiler> compiler;
    WatcherOptions watch;
    watch.gate = &vetting;
    // Under a master, versions are kept for workers that restart, and a quarantined one rolls back.
    const KeptVersions kept(role_ ? config_.server_folder : std::filesystem::path());
    if (kept.enabled()) watch.install.kept = &kept;
    if (role_ && config_.rollback)
        watch.install.quarantined = [&stats](const HandlerVersion& version) {
            return is_quarantined(stats, version.name(), version.file().size, version.file().content_hash);
        };
    watch.install.probation = std::chrono::seconds(config_.quarantine_window_s);
    if (config_.compile_sources) {
        auto include = config_.sdk_include.empty() ? HandlerCompiler::default_sdk_include() : config_.sdk_include;
        compiler = std::make_unique<HandlerCompiler>(include, loader.scratch_dir(),
                                                     std::chrono::seconds(config_.compile_timeout_s),
                                                     role_ ? config_.server_folder : std::filesystem::path());
        watch.compiler = compiler.get();
        watch.dev_diagnostics = config_.dev;
        spdlog::info("--compile: NAME.c and NAME.cpp are compiled against {}{}", include.string(),
                     config_.dev ? "; --dev: compile errors are served as 500" : "");
    }
    HandlerWatcher watcher(control, config_.handlers_dir, loader, registry, watch);
    // A stop that comes before serving begins is kept, and acted on once the loops run.
    int early_stop = 0;
    std::function<void(int)> on_stop = [&early_stop](int signal) { early_stop = signal; };
    signals.async_wait([&on_stop](boost::system::error_code ec, int signal) {
        if (!ec) on_stop(signal);
    });
    bool settled = false;
    watcher.start([&settled] { settled = true; });
    // The loops start once the handlers found now are loaded or refused (their vetting runs on
    // this thread meanwhile): no request meets a 404 for one of them.
    while (!settled && !early_stop && control.run_one() > 0) {}

    std::vector<std::thread> threads;
    for (auto& loop : loops) threads.emplace_back([&loop] { loop->run(); });
    for (unsigned t = 0; t < config_.threads; ++t) {
        stats.slots[first_slot + t].ready_ns.store(monotonic_now_ns());
        stats.slots[first_slot + t].ready.store(1);
    }
    // Only a process that is the service speaks to its manager: a worker's master does.
    std::optional<ServiceNotifier> notifier;
    asio::steady_timer keep_alive(control);
    std::function<void()> keep_alive_loop = [&] {
        notifier->keep_alive(ServiceNotifier::Clock::now());
        keep_alive.expires_after(notifier->watchdog_interval());
        keep_alive.async_wait([&](boost::system::error_code ec) {
            if (!ec) keep_alive_loop();
        });
    };
    if (role_) {
        spdlog::info("worker {} (pid {}) serving with {} event loop(s)", role_->index, ::getpid(), loops.size());
    } else {
        spdlog::info("cspd listening on {}:{} with {} event loop(s) in one process (no supervision); handlers "
                     "from {}, static files from {}",
                     config_.bind_address, port, loops.size(), config_.handlers_dir.string(), config_.www_dir.string());
        notifier.emplace();
        notifier->ready(fmt::format("serving on {}:{} with {} loop(s), one process", config_.bind_address, port,
                                    loops.size()));
        if (notifier->watchdog_interval().count()) keep_alive_loop();
    }

    std::function<void()> wait_for_requests = [&] {
        requests.async_wait([&](boost::system::error_code ec, int signal) {
            if (ec) return;
            if (signal == SIGHUP) {
                spdlog::info("SIGHUP: re-reading the handlers folder");
                watcher.rescan();
            } else if (!config_.log_file.empty()) {
                reopen_log_file(config_.log_file);
            }
            wait_for_requests();
        });
    };
    wait_for_requests();

    // Blocking calls that never come back: once they hold every thread of the pool, this worker
    // can serve no blocking handler again, so it drains and the master starts a fresh one.
    asio::steady_timer stuck_check(control);
    std::function<void()> check_stuck = [&] {
        stuck_check.expires_after(std::chrono::seconds(1));
        stuck_check.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            const unsigned stuck = blocking.stuck(std::chrono::seconds(config_.handler_timeout_s));
            if (stuck < blocking.threads()) return check_stuck();
            if (role_) {
                spdlog::error("all {} blocking-handler threads are stuck in calls longer than --handler-timeout {} s; "
                              "replacing this worker",
                              stuck, config_.handler_timeout_s);
                ::kill(::getpid(), SIGTERM);
            } else {
                spdlog::error("all {} blocking-handler threads are stuck in calls longer than --handler-timeout {} s; "
                              "blocking handlers get 503 until they return (no master to replace this process)",
                              stuck, config_.handler_timeout_s);
                check_stuck();
            }
        });
    };
    if (config_.handler_timeout_s > 0) check_stuck();

    asio::steady_timer drain_deadline(control);
    bool stopping = false;
    on_stop = [&](int signal) {
        stopping = true;
        requests.cancel();
        stuck_check.cancel();
        keep_alive.cancel();
        if (notifier)
            notifier->stopping(signal == SIGQUIT ? "stopping now (SIGQUIT)"
                                                 : fmt::format("draining (up to {} s)", config_.drain_timeout_s));
        if (signal == SIGQUIT) {
            spdlog::info("SIGQUIT: stopping now");
            for (auto& loop : loops) loop->stop();
            watcher.stop();
            return;
        }
        spdlog::info("signal {}: draining (up to {} s)", signal, config_.drain_timeout_s);
        for (auto& loop : loops)  // first: stopping the watcher may wait for a compiler
            loop->begin_drain(std::chrono::seconds(config_.drain_timeout_s));
        watcher.stop();
        drain_deadline.expires_after(std::chrono::seconds(config_.drain_timeout_s));
        drain_deadline.async_wait([&](boost::system::error_code timer_ec) {
            if (timer_ec) return;
            spdlog::warn("drain timeout: closing the remaining connections");
            for (auto& loop : loops) loop->stop();
        });
    };
    if (early_stop) on_stop(early_stop);
    // The watcher's events and the signal share this thread.
    while (!stopping && control.run_one() > 0) {}
    std::thread deadline_thread([&control] { control.run(); });
    for (auto& thread : threads) thread.join();
    control.stop();
    deadline_thread.join();

    // The pool first: its calls post into the loops, which must still exist (they no longer run).
    const bool pool_stopped = blocking.stop(std::chrono::seconds(1));
    registry.clear();
    if (pool_stopped) loops.clear();  // drops the last references: cleanup hooks run, libraries unload
    if (!pool_stopped) {
        // A blocking call that never returned still runs handler code: nothing may be torn down
        // under it (static destructors, the library), so the process ends here.
        spdlog::error("{} blocking handler call(s) never returned; exiting without cleanup",
                      blocking.stuck(std::chrono::seconds(0)));
        spdlog::shutdown();
        ::_exit(0);
    }
    if (role_)
        spdlog::info("worker {} (pid {}) stopped", role_->index, ::getpid());
    else
        spdlog::info("cspd stopped");
    return 0;
}

}  // namespace cspd
