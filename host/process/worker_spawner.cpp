#include "process/worker_spawner.hpp"

#include "process/config.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/service_notifier.hpp"
#include "process/worker_role.hpp"
#include "serving/listener.hpp"
#include "stats/shared_stats.hpp"
#include "store/shared_store.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <system_error>

namespace cspd {

WorkerSpawner::WorkerSpawner(std::vector<std::string> argv, unsigned threads, UniqueFd stats, UniqueFd store,
                             std::vector<UniqueFd> listeners, UniqueFd status_listener,
                             std::vector<UniqueFd> tls_listeners)
    : argv_(std::move(argv)), threads_(threads), stats_(above_worker_fds(std::move(stats), threads)),
      store_(store ? above_worker_fds(std::move(store), threads) : UniqueFd()),
      listeners_(std::move(listeners)), status_listener_(std::move(status_listener)),
      tls_listeners_(std::move(tls_listeners)) {}

UniqueFd WorkerSpawner::above_worker_fds(UniqueFd fd, unsigned threads) {
    const int highest = WorkerRole::highest_fd(threads);
    if (fd.get() > highest) return fd;
    const int high = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, highest + 1);
    if (high < 0) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    return UniqueFd(high);
}

pid_t WorkerSpawner::spawn(unsigned index, unsigned first_slot, int& error, int keys_channel, int ticket_keys) const {
    std::vector<std::string> args = argv_;
    args.insert(args.end(), {"--worker-index", std::to_string(index), "--master-pid", std::to_string(::getpid()),
                             "--worker-slot", std::to_string(first_slot)});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, stats_.get(), WorkerRole::kStatsFd);
    if (store_) posix_spawn_file_actions_adddup2(&actions, store_.get(), WorkerRole::kStoreFd);
    for (unsigned t = 0; t < threads_; ++t)
        posix_spawn_file_actions_adddup2(&actions, listeners_[index * threads_ + t].get(), WorkerRole::listener_fd(t));
    if (status_listener_)
        posix_spawn_file_actions_adddup2(&actions, status_listener_.get(), WorkerRole::status_listener_fd(threads_));
    if (!tls_listeners_.empty())
        for (unsigned t = 0; t < threads_; ++t)
            posix_spawn_file_actions_adddup2(&actions, tls_listeners_[index * threads_ + t].get(),
                                             WorkerRole::tls_listener_fd(threads_, t));
    if (keys_channel >= 0)
        posix_spawn_file_actions_adddup2(&actions, keys_channel, WorkerRole::keys_channel_fd(threads_));
    if (ticket_keys >= 0)
        posix_spawn_file_actions_adddup2(&actions, ticket_keys, WorkerRole::ticket_keys_fd(threads_));
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // Blocked until the worker has its handlers: an early SIGTERM drains it instead of killing it.
    const sigset_t blocked = lifecycle_signals();
    posix_spawnattr_setsigmask(&attributes, &blocked);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    std::vector<char*> environment = environment_for_children();
    error = ::posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv.data(), environment.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return error == 0 ? pid : -1;
}

void WorkerSpawner::close_listeners() {
    listeners_.clear();
    status_listener_.reset();
    tls_listeners_.clear();
}

WorkerSpawner WorkerSpawner::open(const Config& config, const std::vector<std::string>& argv,
                                  const SharedStatsMapping& shared, const std::optional<SharedStore>& store,
                                  unsigned short& port, unsigned short& tls_port) {
    std::vector<UniqueFd> listeners;
    port = config.port;
    for (unsigned i = 0; i < config.loops_total(); ++i) {
        listeners.push_back(
            WorkerSpawner::above_worker_fds(UniqueFd(open_listener(config.bind_address, port, i > 0)), config.threads));
        port = bound_port(listeners.back().get());  // --port 0: the first socket picks, the rest join it
    }
    std::vector<UniqueFd> tls_listeners;
    tls_port = config.tls_port.value_or(0);
    for (unsigned i = 0; config.tls_port && i < config.loops_total(); ++i) {
        tls_listeners.push_back(
            WorkerSpawner::above_worker_fds(UniqueFd(open_listener(config.bind_address, tls_port, i > 0)),
                                            config.threads));
        tls_port = bound_port(tls_listeners.back().get());
    }
    UniqueFd status;
    if (!config.status_listen.empty()) {
        const HostPort where = parse_host_port(config.status_listen);
        status = WorkerSpawner::above_worker_fds(UniqueFd(open_listener(where.address, where.port)), config.threads);
        spdlog::info("/-/status and /metrics on {}:{} only", where.address, bound_port(status.get()));
    }
    UniqueFd stats(::fcntl(shared.fd(), F_DUPFD_CLOEXEC, 0));
    if (!stats) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    UniqueFd store_fd;
    if (store) {
        store_fd.reset(::fcntl(store->fd(), F_DUPFD_CLOEXEC, 0));
        if (!store_fd) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    }
    // --tls-port 0: workers are told the port picked (for --https-redirect's Location).
    std::vector<std::string> worker_argv;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        if (argv[i] == "--tls-port" && i + 1 < argv.size()) {
            ++i;
            continue;
        }
        if (!argv[i].starts_with("--tls-port=")) worker_argv.push_back(argv[i]);
    }
    if (config.tls_port) worker_argv.insert(worker_argv.end(), {"--tls-port", std::to_string(tls_port)});
    return WorkerSpawner(std::move(worker_argv), config.threads, std::move(stats), std::move(store_fd), std::move(listeners),
                         std::move(status), std::move(tls_listeners));
}

}  // namespace cspd
