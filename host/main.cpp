// cspd: command line -> Config -> run (the master, a worker, one process), or `cspd new`, `cspd hash`.
#include "cli/command_line.hpp"
#include "common/fnv1a.hpp"
#include "process/crash_reporter.hpp"
#include "process/handler_vetting.hpp"
#include "process/key_process.hpp"
#include "process/vetting_fork_server.hpp"
#include "process/lifecycle_signals.hpp"
#include "process/log_file.hpp"
#include "process/master.hpp"
#include "process/privileges.hpp"
#include "process/sandbox.hpp"
#include "process/server.hpp"
#include "cli/scaffold.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string_view>

namespace {

int write_skeleton(const cspd::NewHandlerRequest& request) {
    try {
        const auto file = cspd::write_handler_skeleton(request.name, request.lang, request.dir);
        std::printf("wrote %s\n", file.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cspd new: %s\n", e.what());
        return 1;
    }
}

/// Like sha256sum: "HASH  FILE" a line. For a handler that reads NAME.conf or NAME.json,
/// /-/status's hash also covers that file, so it differs from this one.
int print_hashes(const std::vector<std::string>& files) {
    int code = 0;
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (!in.good() && !in.eof()) {
            std::fprintf(stderr, "cspd hash: cannot read %s\n", file.c_str());
            code = 1;
            continue;
        }
        std::printf("%016" PRIx64 "  %s\n", cspd::fnv1a64(bytes), file.c_str());
    }
    return code;
}

int serve(cspd::Invocation invocation, int argc, char** argv) {
    cspd::Config& config = invocation.config;
    const bool worker = invocation.worker_index >= 0;
    if (worker) {
        // A worker outlives no master: when it goes, drain and exit.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != invocation.master_pid) return 0;
    } else if (!config.log_file.empty()) {
        try {
            if (const std::string problem =
                    cspd::log_folder_problem(config.log_file, cspd::worker_account(config, ::geteuid()));
                !problem.empty())
                throw std::runtime_error(problem);
            cspd::redirect_stderr_to(config.log_file);  // workers inherit it
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cspd: %s\n", e.what());
            return 1;
        }
    }
    spdlog::set_default_logger(spdlog::stderr_color_mt("cspd"));  // stdout stays free
    spdlog::set_level(spdlog::level::from_str(config.log_level));
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%P] %v");
    cspd::install_crash_reporter();
    try {
        if (worker) {
            // Handler code never runs as root unless --user root says so (process/privileges).
            cspd::become(cspd::worker_account(config, ::geteuid()));
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a change of user clears it
            if (::getppid() != invocation.master_pid) return 0;
        }
        if (worker)
            return cspd::Server(std::move(config),
                                cspd::WorkerRole{static_cast<unsigned>(invocation.worker_index), invocation.master_pid,
                                                 static_cast<unsigned>(invocation.worker_slot >= 0
                                                                           ? invocation.worker_slot
                                                                           : invocation.worker_index * int(config.threads))})
                .run();
        cspd::announce_sandbox(config.sandbox);  // once, by the process that is the service
        if (config.workers == 0) return cspd::Server(std::move(config)).run();
        return cspd::Master(std::move(config), std::vector<std::string>(argv, argv + argc)).run();
    } catch (const std::exception& e) {
        spdlog::critical("cannot start: {}", e.what());
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    // A peer that resets mid-write must cost one connection, not the process: sendfile has no MSG_NOSIGNAL.
    std::signal(SIGPIPE, SIG_IGN);
    // Internal: a short-lived process that tries a new handler version (process/handler_vetting).
    if (argc >= 2 && std::string_view(argv[1]) == "__vet") return cspd::run_vetting_child(argc - 1, argv + 1);
    // Internal: the process that forks vetting processes for one worker (process/vetting_fork_server).
    if (argc >= 2 && std::string_view(argv[1]) == "__vet-server") return cspd::run_vetting_fork_server(argc - 1, argv + 1);
    // Internal: the only process that holds TLS private keys (process/key_process).
    if (argc >= 2 && std::string_view(argv[1]) == "__keys") return cspd::run_key_process(argc - 1, argv + 1);
    cspd::block_lifecycle_signals();  // until the server has its handlers for them
    cspd::Invocation invocation = cspd::parse_command_line(argc, argv);
    if (invocation.exit_code) return *invocation.exit_code;
    if (invocation.new_handler) return write_skeleton(*invocation.new_handler);
    if (invocation.hash_files) return print_hashes(*invocation.hash_files);
    return serve(std::move(invocation), argc, argv);
}
