#include "process/sandbox.hpp"

#include "common/crash_context.hpp"
#include "common/signal_safe_text.hpp"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace cspd {
namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox knows x86_64 and aarch64"
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif

/// A call no request handler needs, and its name for the log line.
struct Denied {
    long nr;
    const char* name;
};

#define CSPD_DENIED(call) Denied{SYS_##call, #call}
constexpr Denied kDenied[] = {
    CSPD_DENIED(ptrace),          CSPD_DENIED(process_vm_readv), CSPD_DENIED(process_vm_writev),
    CSPD_DENIED(mount),           CSPD_DENIED(umount2),          CSPD_DENIED(pivot_root),
    CSPD_DENIED(chroot),          CSPD_DENIED(fsopen),           CSPD_DENIED(fsmount),
    CSPD_DENIED(fsconfig),        CSPD_DENIED(fspick),           CSPD_DENIED(move_mount),
    CSPD_DENIED(open_tree),       CSPD_DENIED(mount_setattr),    CSPD_DENIED(unshare),
    CSPD_DENIED(setns),           CSPD_DENIED(bpf),              CSPD_DENIED(kexec_load),
    CSPD_DENIED(kexec_file_load), CSPD_DENIED(init_module),      CSPD_DENIED(finit_module),
    CSPD_DENIED(delete_module),   CSPD_DENIED(keyctl),           CSPD_DENIED(add_key),
    CSPD_DENIED(request_key),     CSPD_DENIED(perf_event_open),  CSPD_DENIED(userfaultfd),
    CSPD_DENIED(personality),     CSPD_DENIED(io_uring_setup),   CSPD_DENIED(pidfd_getfd),
    CSPD_DENIED(process_madvise), CSPD_DENIED(swapon),           CSPD_DENIED(swapoff),
    CSPD_DENIED(reboot),          CSPD_DENIED(acct),             CSPD_DENIED(open_by_handle_at),
    CSPD_DENIED(quotactl),
#if defined(__x86_64__)
    CSPD_DENIED(iopl),            CSPD_DENIED(ioperm),
#endif
};
constexpr Denied kExec[] = {CSPD_DENIED(execve), CSPD_DENIED(execveat)};
#undef CSPD_DENIED

const char* call_name(long nr) noexcept {
    for (const Denied& d : kDenied)
        if (d.nr == nr) return d.name;
    for (const Denied& d : kExec)
        if (d.nr == nr) return d.name;
    if (nr == SYS_clone) return "clone (a new namespace)";
    if (nr == SYS_socket) return "socket (raw or packet)";
    return "a call of another architecture";
}

std::atomic<std::uint64_t> g_denials{0};
bool g_log_only = false;
// One line per handler and call: a small table of (handler, call) keys seen, filled lock-free.
constexpr std::size_t kSaid = 256;
std::atomic<std::uint64_t> g_said[kSaid];

#if defined(__x86_64__)
// Log-only: the one syscall instruction the filter lets through, to run a trapped call after all.
extern "C" long cspd_sandbox_syscall6(long nr, long a, long b, long c, long d, long e, long f);
extern "C" char cspd_sandbox_syscall_ip[];
__asm__(".text\n.globl cspd_sandbox_syscall6\ncspd_sandbox_syscall6:\n mov %rdi,%rax\n mov %rsi,%rdi\n"
        " mov %rdx,%rsi\n mov %rcx,%rdx\n mov %r8,%r10\n mov %r9,%r8\n mov 8(%rsp),%r9\n syscall\n"
        ".globl cspd_sandbox_syscall_ip\ncspd_sandbox_syscall_ip:\n ret\n");
#endif

bool first_time(std::uint64_t key) noexcept {
    key |= 1;  // never 0, the empty mark
    for (std::size_t probe = 0; probe < kSaid; ++probe) {
        std::atomic<std::uint64_t>& slot = g_said[(key + probe) % kSaid];
        std::uint64_t seen = slot.load(std::memory_order_relaxed);
        if (seen == key) return false;
        if (seen == 0 && slot.compare_exchange_strong(seen, key)) return true;
        if (seen == key) return false;
    }
    return false;  // full: enough has been said
}

void on_sigsys(int, siginfo_t* info, void* context) noexcept {
    const int saved_errno = errno;
    g_denials.fetch_add(1, std::memory_order_relaxed);
    const ThreadCrashContext& thread = this_thread_crash_context();
    const char* handler = thread.running ? thread.running->name : nullptr;
    const std::uint64_t key = (thread.running ? thread.running->content_hash : 0) * 1000003u +
                              static_cast<std::uint64_t>(info->si_syscall);
    if (first_time(key)) {
        SignalSafeLine<384> line;
        line.text("cspd: sandbox: ");
        if (handler)
            line.text("handler ").text(handler).text(" #").number(thread.running->sequence).text(" called ");
        else
            line.text("code outside any handler's call (a thread of its own, or the host) called ");
        line.text(call_name(info->si_syscall)).text(" (").number(static_cast<std::int64_t>(info->si_syscall)).text(")");
        if (handler) line.text(" ").text(phase_text(thread.phase));
        line.text(g_log_only ? ": allowed (--sandbox-log-only)\n" : ": denied (EPERM)\n");
        for (std::size_t at = 0; at < line.size();) {
            const ssize_t n = ::write(STDERR_FILENO, line.data() + at, line.size() - at);
            if (n <= 0 && errno != EINTR) break;
            if (n > 0) at += static_cast<std::size_t>(n);
        }
    }
    auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
    greg_t* r = uc->uc_mcontext.gregs;
    r[REG_RAX] = g_log_only ? cspd_sandbox_syscall6(info->si_syscall, r[REG_RDI], r[REG_RSI], r[REG_RDX], r[REG_R10],
                                                    r[REG_R8], r[REG_R9])
                            : -EPERM;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = static_cast<unsigned long>(-EPERM);  // log-only runs nothing again here
#endif
    errno = saved_errno;
}

/// A seccomp program with forward jumps to one trap block at its end.
class FilterProgram {
public:
    void load(std::uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
    void load_nr() { load(offsetof(seccomp_data, nr)); }
    /// If A == k: trap. Else on.
    void trap_if(std::uint32_t k) {
        code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
        jump_to_trap();
    }
    /// If A == k: return `action`. Else on.
    void return_if(std::uint32_t k, std::uint32_t action) {
        code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
        code_.push_back(BPF_STMT(BPF_RET | BPF_K, action));
    }
    void jump_to_trap() {
        traps_.push_back(code_.size());
        code_.push_back(BPF_STMT(BPF_JMP | BPF_JA, 0));
    }
    /// Runs `block` only if A == k (the block ends by loading the call number again).
    template <class Block>
    void when(std::uint32_t k, Block block) {
        const std::size_t test = code_.size();
        code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0));
        block();
        load_nr();
        code_[test].jf = static_cast<std::uint8_t>(code_.size() - test - 1);
    }
    void push(sock_filter instruction) { code_.push_back(instruction); }
    std::size_t size() const { return code_.size(); }

    /// The program: what fell through is allowed; the trap block traps (log-only: but for the
    /// host's own syscall instruction, which runs a trapped call after all).
    std::vector<sock_filter> finish(bool log_only) {
        code_.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        const std::size_t trap = code_.size();
#if defined(__x86_64__)
        if (log_only) {
            const auto ip = reinterpret_cast<std::uint64_t>(cspd_sandbox_syscall_ip);
            code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer)));
            code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(ip), 0, 3));
            code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, instruction_pointer) + 4));
            code_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(ip >> 32), 0, 1));
            code_.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        }
#else
        (void)log_only;
#endif
        code_.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
        for (const std::size_t at : traps_) code_[at].k = static_cast<std::uint32_t>(trap - at - 1);
        return code_;
    }

private:
    std::vector<sock_filter> code_;
    std::vector<std::size_t> traps_;
};

constexpr std::uint32_t kNewNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                         CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;

std::vector<sock_filter> build_filter(const SandboxOptions& options) {
    FilterProgram p;
    // Another architecture's calls (int $0x80 on x86_64) would get round every rule below.
    p.load(offsetof(seccomp_data, arch));
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
    p.jump_to_trap();
    p.load_nr();
#if defined(__x86_64__)
    p.push(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32's numbers
    p.jump_to_trap();
#endif
    for (const Denied& d : kDenied) p.trap_if(static_cast<std::uint32_t>(d.nr));
    if (!options.allow_exec)
        for (const Denied& d : kExec) p.trap_if(static_cast<std::uint32_t>(d.nr));
    // clone3's flags sit in memory a filter cannot read: ENOSYS makes glibc fall back to clone.
    p.return_if(SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS);
    p.when(SYS_clone, [&] {
        p.load(offsetof(seccomp_data, args[0]));
        p.push(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kNewNamespaces, 0, 1));
        p.jump_to_trap();
        // posix_spawn's vfork runs with every signal blocked (a trap would kill the process):
        // refused plainly, as exec is.
        if (!options.allow_exec && !options.log_only) {
            p.push(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_VFORK, 0, 1));
            p.push(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
        }
    });
    p.when(SYS_socket, [&] {
        p.load(offsetof(seccomp_data, args[0]));
        p.trap_if(AF_PACKET);
        // Raw IP sockets, but not the raw netlink socket getaddrinfo opens.
        p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0));
        p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 4));
        p.load(offsetof(seccomp_data, args[1]));
        p.push(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf));
        p.trap_if(SOCK_RAW);
    });
    // Nobody takes SIGSYS's handler away: the log and the blame stay.
    p.when(SYS_rt_sigaction, [&] {
        p.load(offsetof(seccomp_data, args[0]));
        p.return_if(SIGSYS, SECCOMP_RET_ERRNO | EPERM);
    });
    return p.finish(options.log_only);
}

}  // namespace

SandboxSupport probe_sandbox() noexcept {
    SandboxSupport support;
    // A mode-filter request with no program fails with EFAULT where filters exist, EINVAL where not.
    support.seccomp = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, nullptr) < 0 && errno == EFAULT;
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    support.landlock = abi > 0 ? static_cast<int>(abi) : 0;
    return support;
}

bool install_sandbox(const SandboxOptions& options, std::string& why) {
    g_log_only = options.log_only;
    struct sigaction action {};
    action.sa_sigaction = on_sigsys;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGSYS, &action, nullptr) != 0) {
        why = std::string("cannot handle SIGSYS: ") + std::strerror(errno);
        return false;
    }
    std::vector<sock_filter> code = build_filter(options);
    const sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
    // Unprivileged processes may filter only once they cannot gain privileges (setuid programs).
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        why = std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
        return false;
    }
    // Every thread of the process, the ones already running too.
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0) {
        why = std::string("seccomp: ") + std::strerror(errno);
        return false;
    }
    return true;
}

std::uint64_t sandbox_denials() noexcept { return g_denials.load(std::memory_order_relaxed); }

}  // namespace cspd
