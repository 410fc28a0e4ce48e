// The sandbox's call filter (seccomp), in a child process each (a filter cannot be taken back): what it
// denies returns EPERM and is logged once, naming the handler that was running; what it must not
// break (threads, TCP, the netlink socket getaddrinfo opens) still works; log-only lets it run.
#include "common/crash_context.hpp"
#include "process/call_filter.hpp"
#include "stats/sandbox_denials.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/syscall.h>

#include <cerrno>
#include <iterator>
#include <functional>
#include <string>

extern char** environ;

namespace cspd {
namespace {

struct SandboxChild {
    int status = -1;
    std::string said;  // its standard error
};

/// Runs `body` in a child that installed the sandbox first: its exit status and what it wrote.
SandboxChild run_sandboxed(const CallFilterOptions& options, const std::function<int()>& body) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        std::string why;
        if (!install_call_filter(options, why)) ::_exit(99);
        ::_exit(body());
    }
    ::close(pipe_fds[1]);
    SandboxChild child;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) child.said.append(buffer, std::size_t(n));
    ::close(pipe_fds[0]);
    ::waitpid(pid, &child.status, 0);
    return child;
}

int denied(long result) { return result == -1 && errno == EPERM ? 0 : 1; }

HandlerLabel g_sandboxed_label{"evil.so", 3, 0, 0x1234};

TEST(CallFilter, TheKernelHasSeccomp) { EXPECT_TRUE(seccomp_available()); }

TEST(CallFilter, DeniesWhatNoHandlerNeedsAndNamesWhoAsked) {
    const SandboxChild child = run_sandboxed({}, [] {
        ThreadCrashContext& me = this_thread_crash_context();
        me.running = &g_sandboxed_label;
        me.phase = HandlerPhase::call;
        int failures = 0;
        char* const argv[] = {const_cast<char*>("true"), nullptr};
        failures += denied(::execve("/bin/true", argv, environ));
        failures += denied(::execve("/bin/true", argv, environ));  // said once
        failures += denied(::socket(AF_PACKET, SOCK_RAW, 0));
        failures += denied(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1));
        failures += denied(::unshare(CLONE_NEWUSER));
        pid_t spawned = 0;
        failures += ::posix_spawn(&spawned, "/bin/true", nullptr, nullptr, argv, environ) == EPERM ? 0 : 1;
        struct sigaction quiet {};
        quiet.sa_handler = SIG_IGN;
        failures += denied(::sigaction(SIGSYS, &quiet, nullptr));
        return failures;
    });
    ASSERT_TRUE(WIFEXITED(child.status)) << child.status << child.said;
    EXPECT_EQ(WEXITSTATUS(child.status), 0) << child.said;
    EXPECT_NE(child.said.find("cspd: sandbox: handler evil.so #3 called execve (59) in a call: denied (EPERM)"),
              std::string::npos)
        << child.said;
    EXPECT_EQ(child.said.find("execve"), child.said.rfind("execve")) << child.said;  // one line a handler and call
    EXPECT_NE(child.said.find("called socket (raw or packet"), std::string::npos) << child.said;
    EXPECT_NE(child.said.find("unshare"), std::string::npos) << child.said;
}

TEST(CallFilter, LeavesThreadsSocketsAndNetlinkAlone) {
    const SandboxChild child = run_sandboxed({}, [] {
        int failures = 0;
        pthread_t thread;
        if (::pthread_create(&thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr) != 0) ++failures;
        else ::pthread_join(thread, nullptr);
        for (const int family : {AF_INET, AF_INET6, AF_UNIX}) {
            const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            failures += fd < 0;
            if (fd >= 0) ::close(fd);
        }
        const int netlink = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);  // getaddrinfo's
        failures += netlink < 0;
        if (netlink >= 0) ::close(netlink);
        return failures;
    });
    ASSERT_TRUE(WIFEXITED(child.status)) << child.said;
    EXPECT_EQ(WEXITSTATUS(child.status), 0) << child.said;
    EXPECT_EQ(child.said, "");
}

TEST(CallFilter, LogOnlyReportsAndLetsTheCallRun) {
    CallFilterOptions options;
    options.log_only = true;
    const SandboxChild child = run_sandboxed(options, [] {
        char* const argv[] = {const_cast<char*>("true"), nullptr};
        ::execve("/bin/true", argv, environ);
        return 42;  // execve failed
    });
    ASSERT_TRUE(WIFEXITED(child.status)) << child.said;
    EXPECT_EQ(WEXITSTATUS(child.status), 0) << child.said;  // /bin/true ran
    EXPECT_NE(child.said.find("code outside any handler's call (a thread of its own, or the host) called execve (59): "
                              "allowed (--sandbox-log-only)"),
              std::string::npos)
        << child.said;
}

// The filter is a binary search over call numbers: every denied number is found, and the calls
// around them are not (each of these, allowed, fails on its own terms, never with a trap).
TEST(CallFilter, TheSearchFindsEveryDeniedCallAndNoOther) {
    const SandboxChild child = run_sandboxed({}, [] {
        static SandboxDenials table;
        count_denials_in(&table);
        const long denied_calls[] = {SYS_process_vm_readv, SYS_mount,        SYS_umount2,     SYS_pivot_root,
                                     SYS_chroot,           SYS_unshare,      SYS_setns,       SYS_bpf,
                                     SYS_kexec_load,       SYS_init_module,  SYS_delete_module, SYS_keyctl,
                                     SYS_add_key,          SYS_request_key,  SYS_perf_event_open, SYS_userfaultfd,
                                     SYS_io_uring_setup,   SYS_swapon,       SYS_swapoff,     SYS_quotactl,
                                     SYS_pidfd_getfd,      SYS_open_tree,    SYS_fsopen,      SYS_execveat};
        int failures = 0;
        for (const long nr : denied_calls) failures += denied(::syscall(nr, -1L, 0L, 0L, 0L, 0L, 0L));
        std::uint64_t counted = 0;
        for (const SandboxDenial& entry : table.entries) counted += entry.count.load();
        failures += counted == std::size(denied_calls) ? 0 : 100;
        // Allowed, around and between them.
        failures += ::syscall(SYS_getpid) != ::getpid();
        failures += ::syscall(SYS_sched_yield) != 0;
        failures += ::syscall(SYS_getppid) <= 0;
        failures += ::syscall(SYS_gettid) <= 0;
        failures += ::syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS;
        failures += ::syscall(SYS_dup, -1) != -1 || errno != EBADF;
        failures += ::syscall(SYS_close_range, 1000000, 1000001, 0) != 0;
        std::uint64_t after = 0;
        for (const SandboxDenial& entry : table.entries) after += entry.count.load();
        failures += after == counted ? 0 : 1000;
        return failures;
    });
    ASSERT_TRUE(WIFEXITED(child.status)) << child.said;
    EXPECT_EQ(WEXITSTATUS(child.status), 0) << child.said;
}

#if defined(__x86_64__)
TEST(CallFilter, AnotherArchitecturesCallsAreTrappedToo) {
    const SandboxChild child = run_sandboxed({}, [] {
        long result;
        // i386's getpid (20) through int $0x80: a filter that checked only x86_64's numbers would pass it.
        __asm__ volatile("int $0x80" : "=a"(result) : "a"(20L) : "memory");
        return result == -EPERM ? 0 : 1;
    });
    ASSERT_TRUE(WIFEXITED(child.status)) << child.said;
    EXPECT_EQ(WEXITSTATUS(child.status), 0) << child.said;
    EXPECT_NE(child.said.find("a call of another architecture"), std::string::npos) << child.said;
}
#endif

}  // namespace
}  // namespace cspd
