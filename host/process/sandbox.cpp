#include "process/sandbox.hpp"

#include "handler/compiler.hpp"
#include "process/call_filter.hpp"
#include "stats/sandbox_denials.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <system_error>

namespace cspd {
namespace {

/// Where the system keeps its programs and libraries (merged /usr or not).
constexpr const char* kSystemFolders[] = {"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"};
/// What libraries read from /proc and /sys beyond the process's own folder (CPU counts, memory).
/// What libraries read beyond the process's own /proc entries: the system's (CPU counts, memory,
/// limits), CPU counts and cgroup limits in /sys, randomness. Not all of /proc: another process's
/// environment and maps would open (only its memory is refused as tracing is).
constexpr const char* kSystemFacts[] = {"/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/loadavg",
                                        "/proc/uptime", "/proc/version", "/proc/filesystems",
                                        "/proc/sys/kernel", "/proc/sys/vm/overcommit_memory",
                                        "/sys/devices/system/cpu", "/sys/fs/cgroup", "/dev/urandom", "/dev/random"};

std::filesystem::path folder_of(const std::filesystem::path& file) {
    return std::filesystem::absolute(file).lexically_normal().parent_path();
}

}  // namespace

void announce_sandbox(const SandboxConfig& config) {
    if (!config.enabled) {
        spdlog::warn("sandbox: off (--no-sandbox): handler code may do all that the workers' account may");
        return;
    }
    const int landlock = landlock_abi();
    const bool seccomp = seccomp_available();
    if (!seccomp)
        spdlog::error("sandbox: this kernel takes no seccomp filters: handlers may run programs, trace, mount and "
                      "open raw sockets as the workers' account may");
    if (config.log_only)
        spdlog::warn("sandbox: --sandbox-log-only: denied calls are logged and counted, then run; no file rules");
    else if (landlock == 0)
        spdlog::error("sandbox: this kernel has no Landlock (or it is off at boot): handlers may read and write "
                      "every file the workers' account may");
    else if (landlock < 6)
        spdlog::warn("sandbox: Landlock ABI {} (signals to sibling workers need 6, Linux 6.12): a handler may "
                     "signal the master and the other workers",
                     landlock);
    if (seccomp || landlock)
        spdlog::info("sandbox: {}{}{}{}", seccomp ? "call filter (seccomp)" : "",
                     seccomp && landlock && !config.log_only ? " and " : "",
                     landlock && !config.log_only ? fmt::format("file rules (Landlock ABI {})", landlock) : "",
                     config.allow_exec ? "; handlers may start programs (--allow-exec or --compile)" : "");
}

std::string SandboxPolicy::refuses(const std::filesystem::path& folder, const std::string& name,
                                   const std::filesystem::path& file, bool& grantable) const {
    const SandboxNeeds needs = needs_of(folder, name, file, never);
    grantable = needs.error.empty();
    if (!grantable) return "its sandbox declaration cannot be taken: " + needs.error;
    return beyond(needs, rules, exec, network);
}

SandboxPolicy serving_policy(const Config& config, const std::filesystem::path& private_folder) {
    SandboxPolicy policy;
    FileRules& rules = policy.rules;
    for (const char* folder : kSystemFolders) rules.run.emplace_back(folder);
    // This program: a serving process starts its vetting fork server (and, alone, its key process) from it.
    std::error_code ec;
    if (const auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) rules.run.push_back(self);
    rules.read.push_back(config.handlers_dir);
    rules.read.push_back(config.www_dir);
    if (config.compile_sources)
        rules.read.push_back(config.sdk_include.empty() ? HandlerCompiler::default_sdk_include() : config.sdk_include);
    // This process's own entries (a vetting process, forked later, has a pid of its own: it reads
    // /proc/self no more than another process's).
    rules.read.push_back(std::filesystem::path("/proc") / std::to_string(::getpid()));
    for (const char* fact : kSystemFacts) rules.read.emplace_back(fact);
    std::vector<std::filesystem::path>& never = policy.never;
    if (!config.certs_dir.empty()) never.push_back(normal_path(config.certs_dir));
    add_world_readable(rules, "/etc", never);

    rules.write.push_back(private_folder);
    for (const char* device : {"/dev/null", "/dev/zero", "/dev/full"}) rules.write.emplace_back(device);
    if (!config.server_folder.empty()) rules.write.push_back(config.server_folder);
    if (!config.connection.upload_dir.empty()) rules.write.push_back(config.connection.upload_dir);
    if (!config.sandbox.data_dir.empty()) {
        std::filesystem::create_directories(config.sandbox.data_dir, ec);
        if (ec) spdlog::error("--data-dir {}: {}", config.sandbox.data_dir.string(), ec.message());
        rules.write.push_back(config.sandbox.data_dir);
    }
    if (!config.log_file.empty()) rules.append.push_back(folder_of(config.log_file));
    if (!config.access_log.empty() && config.access_log != "-") rules.append.push_back(folder_of(config.access_log));
    if (config.compile_sources)  // a compiler named by CC or CXX may live anywhere
        for (const char* variable : {"CC", "CXX"})
            if (const char* compiler = std::getenv(variable); compiler && std::strchr(compiler, '/'))
                rules.run.push_back(std::filesystem::absolute(compiler).parent_path());

    // The rules are lists of what is allowed: a key folder beneath one of them would be open.
    for (const auto* list : {&rules.read, &rules.run, &rules.write, &rules.append})
        for (const auto& root : *list)
            for (const auto& secret : never)
                if (is_beneath(secret, normal_path(root)))
                    spdlog::error("sandbox: --certs {} lies beneath {}, which handlers may reach: move the keys "
                                  "out of it",
                                  secret.string(), root.string());

    policy.declared = needs_of_folder(config.handlers_dir, config.compile_sources, never);
    grant(rules, policy.declared);
    policy.exec = config.sandbox.allow_exec || policy.declared.exec;
    policy.network = policy.declared.network;
    if (const std::string extra = policy.declared.describe(); !extra.empty())
        spdlog::info("sandbox: the handlers declared {}", extra);
    return policy;
}

void enter_file_rules(const Config& config, const SandboxPolicy& policy, SandboxFacts& facts) {
    const FileRules& rules = policy.rules;
    if (!config.sandbox.enabled) return;
    facts.entered.store(1, std::memory_order_relaxed);
    facts.log_only.store(config.sandbox.log_only, std::memory_order_relaxed);
    facts.exec.store(policy.exec, std::memory_order_relaxed);
    const int abi = landlock_abi();
    if (config.sandbox.log_only || abi == 0) return;
    std::string why;
    if (!apply_file_rules(rules, why)) {
        spdlog::error("sandbox: no file rules for this process: {}", why);
        return;
    }
    facts.landlock.store(static_cast<std::uint32_t>(abi), std::memory_order_relaxed);
}

std::string vetting_call_filter(const SandboxConfig& config, const SandboxPolicy& policy) {
    if (!config.enabled || !seccomp_available()) return {};
    return std::string(config.log_only ? "log" : policy.exec ? "exec" : "deny") + (policy.network ? "" : ",nonet");
}

bool install_vetting_call_filter(std::string_view mode, std::string& why) {
    CallFilterOptions options;
    options.log_only = mode.starts_with("log");
    options.allow_exec = mode.starts_with("exec");
    options.no_network = mode.ends_with(",nonet");
    options.deny_path_truncate = landlock_abi() < 3;
    return install_call_filter(options, why);
}

void enter_call_filter(const Config& config, const SandboxPolicy& policy, SandboxDenials* table, SandboxFacts& facts) {
    if (!config.sandbox.enabled || !seccomp_available()) return;
    count_denials_in(table);
    std::string why;
    if (!install_call_filter(
            {.log_only = config.sandbox.log_only,
             .allow_exec = policy.exec,
             .no_network = !policy.network,
             .deny_path_truncate = landlock_abi() < 3},
            why)) {
        spdlog::error("sandbox: no call filter in this process: {}", why);
        return;
    }
    facts.seccomp.store(1, std::memory_order_relaxed);
}

}  // namespace cspd
