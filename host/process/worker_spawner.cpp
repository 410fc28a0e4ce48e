#include "process/worker_spawner.hpp"

#include "common/spawn.hpp"
#include "process/config.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/service_notifier.hpp"
#include "process/worker_role.hpp"
#include "serving/listener.hpp"
#include "stats/shared_stats.hpp"
#include "limits/client_table.hpp"
#include "store/shared_store.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <string_view>
#include <system_error>
#include <vector>

namespace cspd {
namespace {

void with_worker_malloc_cache(std::vector<char*>& environment) {
    // glibc keeps 7 freed blocks of each size per thread; a worker's read of HTTP/2 frames that
    // opens and ends dozens of streams frees more than that, and the rest take malloc's slow
    // paths (_int_free, _int_malloc: 14% of an h2c request's instructions). 64 each covers a
    // read's worth (callgrind, h2c -c16 -m32, hello: 17,216 instructions a request with glibc's
    // 7, 15,781 with 32, 15,762 with 128). An operator's own GLIBC_TUNABLES is left as it is.
    static char tunable[] = "GLIBC_TUNABLES=glibc.malloc.tcache_count=64";
    for (const char* variable : environment)
        if (variable && std::string_view(variable).starts_with("GLIBC_TUNABLES=")) return;
    environment.insert(environment.end() - 1, tunable);  // before the null that ends it
}

}  // namespace

WorkerSpawner::WorkerSpawner(std::vector<std::string> argv, WorkerFds fds, UniqueFd stats, UniqueFd store,
                             UniqueFd clients, std::vector<UniqueFd> listeners, std::vector<UniqueFd> status_listeners,
                             std::vector<UniqueFd> tls_listeners)
    : argv_(std::move(argv)), fds_(fds), stats_(above_worker_fds(std::move(stats), fds)),
      store_(store ? above_worker_fds(std::move(store), fds) : UniqueFd()),
      clients_(above_worker_fds(std::move(clients), fds)), listeners_(std::move(listeners)),
      status_listeners_(std::move(status_listeners)), tls_listeners_(std::move(tls_listeners)) {}

UniqueFd WorkerSpawner::above_worker_fds(UniqueFd fd, const WorkerFds& fds) {
    const int highest = fds.highest();
    if (fd.get() > highest) return fd;
    const int high = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, highest + 1);
    if (high < 0) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    return UniqueFd(high);
}

pid_t WorkerSpawner::spawn(unsigned index, unsigned first_slot, int& error, int keys_channel, int ticket_keys) const {
    std::vector<std::string> args = argv_;
    args.insert(args.end(), {"--worker-index", std::to_string(index), "--master-pid", std::to_string(::getpid()),
                             "--worker-slot", std::to_string(first_slot)});
    Spawn spawn;
    spawn.give(stats_.get(), WorkerFds::kStats);
    if (store_) spawn.give(store_.get(), WorkerFds::kStore);
    spawn.give(clients_.get(), WorkerFds::kClients);
    const std::size_t per_worker = std::size_t(fds_.binds) * fds_.threads;
    for (unsigned b = 0; b < fds_.binds; ++b)
        for (unsigned t = 0; t < fds_.threads; ++t) {
            const std::size_t mine = index * per_worker + b * fds_.threads + t;
            spawn.give(listeners_[mine].get(), fds_.listener(b, t));
            if (!tls_listeners_.empty()) spawn.give(tls_listeners_[mine].get(), fds_.tls_listener(b, t));
        }
    for (unsigned i = 0; i < status_listeners_.size(); ++i) spawn.give(status_listeners_[i].get(), fds_.status_listener(i));
    if (keys_channel >= 0) spawn.give(keys_channel, fds_.keys_channel());
    if (ticket_keys >= 0) spawn.give(ticket_keys, fds_.ticket_keys());
    // Blocked until the worker has its handlers: an early SIGTERM drains it instead of killing it.
    spawn.signal_mask(lifecycle_signals());
    std::vector<char*> environment = environment_for_children();
    with_worker_malloc_cache(environment);
    return spawn.start("/proc/self/exe", args, error, false, environment.data());
}

void WorkerSpawner::close_listeners() {
    listeners_.clear();
    status_listeners_.clear();
    tls_listeners_.clear();
}

WorkerSpawner WorkerSpawner::open(const Config& config, const std::vector<std::string>& argv,
                                  const SharedStatsMapping& shared, const std::optional<SharedStore>& store,
                                  const ClientTable& clients, unsigned short& port,
                                  unsigned short& tls_port) {
    const WorkerFds fds = config.worker_fds();
    // By worker, then bind address, then loop (as spawn hands them down). --port 0: the first
    // socket picks the port, and every other joins it, on every address.
    const auto open_all = [&](unsigned short& chosen) {
        std::vector<UniqueFd> sockets;
        for (unsigned w = 0; w < config.loops_total() / config.threads; ++w)
            for (unsigned b = 0; b < fds.binds; ++b)
                for (unsigned t = 0; t < config.threads; ++t) {
                    const bool joining = w > 0 || t > 0;  // the first socket of each address looks for another server
                    sockets.push_back(above_worker_fds(UniqueFd(open_listener(config.binds[b], chosen, joining)), fds));
                    chosen = bound_port(sockets.back().get());
                }
        return sockets;
    };
    port = config.port;
    std::vector<UniqueFd> listeners = open_all(port);
    tls_port = config.tls_port.value_or(0);
    std::vector<UniqueFd> tls_listeners = config.tls_port ? open_all(tls_port) : std::vector<UniqueFd>();
    std::vector<UniqueFd> status;
    for (const std::string& address : config.status_listen) {
        const HostPort where = parse_host_port(address);
        status.push_back(above_worker_fds(UniqueFd(open_listener(where.address, where.port)), fds));
        spdlog::info("/-/status and /metrics on {} only", listening_address(where.address, bound_port(status.back().get())));
    }
    UniqueFd stats(::fcntl(shared.fd(), F_DUPFD_CLOEXEC, 0));
    if (!stats) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
    const auto copy_of = [](int fd) {
        UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
        if (!copy) throw std::system_error(errno, std::system_category(), "fcntl(F_DUPFD_CLOEXEC)");
        return copy;
    };
    UniqueFd store_fd = store ? copy_of(store->fd()) : UniqueFd();
    UniqueFd clients_fd = copy_of(clients.fd());
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
    return WorkerSpawner(std::move(worker_argv), fds, std::move(stats), std::move(store_fd), std::move(clients_fd),
                         std::move(listeners),
                         std::move(status), std::move(tls_listeners));
}

}  // namespace cspd
