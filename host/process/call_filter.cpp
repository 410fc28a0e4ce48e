#include "process/call_filter.hpp"

#include "stats/sandbox_denials.hpp"

#include "common/crash_context.hpp"
#include "common/signal_safe_text.hpp"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>
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


/// A call no request handler needs, and its name for the log line.
struct Denied {
    long nr;
    const char* name;
};

// LeakSanitizer stops the world with ptrace at exit: a sanitizer build leaves ptrace to the file
// rules' domain (Landlock refuses tracing any process outside it).
#if defined(__SANITIZE_ADDRESS__)
#define CSPD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CSPD_SANITIZED 1
#endif
#endif

#define CSPD_DENIED(call) Denied{SYS_##call, #call}
constexpr Denied kDenied[] = {
#if !defined(CSPD_SANITIZED)
    CSPD_DENIED(ptrace),
#endif
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
// Calls on paths that Landlock does not check: owners and extended attributes (file
// capabilities) of any file, whatever the file rules say. A handler's own files are reached
// through descriptors (fchown, fsetxattr), which the file rules gated when it opened them.
constexpr Denied kPathMetadata[] = {CSPD_DENIED(chown),       CSPD_DENIED(lchown),       CSPD_DENIED(fchownat),
                                    CSPD_DENIED(setxattr),    CSPD_DENIED(lsetxattr),    CSPD_DENIED(removexattr),
                                    CSPD_DENIED(lremovexattr)};
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
// Modes of any file (chmod o+r /etc/shadow as root): denied unless programs may be started --
// a linker marks its output executable by path (--compile).
constexpr Denied kPathModes[] = {CSPD_DENIED(chmod), CSPD_DENIED(fchmodat), CSPD_DENIED(fchmodat2)};
// truncate() by path: Landlock checks it from ABI 3 only.
constexpr Denied kPathTruncate[] = {CSPD_DENIED(truncate)};
#undef CSPD_DENIED

const char* call_name(long nr) noexcept {
    for (const Denied& d : kDenied)
        if (d.nr == nr) return d.name;
    for (const Denied& d : kExec)
        if (d.nr == nr) return d.name;
    for (const Denied& d : kPathMetadata)
        if (d.nr == nr) return d.name;
    for (const Denied& d : kPathModes)
        if (d.nr == nr) return d.name;
    for (const Denied& d : kPathTruncate)
        if (d.nr == nr) return d.name;
    if (nr == SYS_clone) return "clone";
    if (nr == SYS_socket) return "socket";
    if (nr == SYS_process_vm_readv) return "process_vm_readv";
    if (nr == SYS_process_vm_writev) return "process_vm_writev";
    return "other_arch";
}

/// What the log line adds to a call's name: why that call was trapped.
const char* call_hint(long nr) noexcept {
    if (nr == SYS_clone) return " (a new namespace)";
    if (nr == SYS_socket) return " (raw or packet; or IP, where no handler needs the network)";
    if (nr == SYS_process_vm_readv || nr == SYS_process_vm_writev) return " (another process)";
    if (std::strcmp(call_name(nr), "other_arch") == 0) return " (a call of another architecture)";
    return "";
}

std::atomic<std::uint64_t> g_denials{0};
std::atomic<SandboxDenials*> g_table{nullptr};
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
    // A SIGSYS another process sent (kill) is no trapped call: its registers are left alone.
    constexpr int kSeccompTrap = 1;  // si_code SYS_SECCOMP, which not every libc header names
    if (info->si_code != kSeccompTrap) return;
    const int saved_errno = errno;
    g_denials.fetch_add(1, std::memory_order_relaxed);
    const ThreadCrashContext& thread = this_thread_crash_context();
    const char* handler = thread.running ? thread.running->name : nullptr;
    const std::uint64_t key = (thread.running ? thread.running->content_hash : 0) * 1000003u +
                              static_cast<std::uint64_t>(info->si_syscall);
    if (SandboxDenials* table = g_table.load(std::memory_order_relaxed))
        table->count(key, handler, call_name(info->si_syscall));
    // Log-only runs the call after all -- a native one on x86_64 (the gadget's): another
    // architecture's number means another call here (i386's 11 is munmap), so that stays refused.
#if defined(__x86_64__)
    const bool rerun =
        g_log_only && info->si_arch == kNativeArch && info->si_syscall >= 0 && info->si_syscall < 0x40000000;
#else
    const bool rerun = false;
#endif
    if (first_time(key)) {
        SignalSafeLine<384> line;
        line.text("cspd: sandbox: ");
        if (handler)
            line.text("handler ").text(handler).text(" #").number(thread.running->sequence).text(" called ");
        else
            line.text("code outside any handler's call (a thread of its own, or the host) called ");
        line.text(call_name(info->si_syscall))
            .text(call_hint(info->si_syscall))
            .text(" (")
            .number(static_cast<std::int64_t>(info->si_syscall))
            .text(")");
        if (handler) line.text(" ").text(phase_text(thread.phase));
        line.text(rerun ? ": allowed (--sandbox-log-only)\n" : ": denied (EPERM)\n");
        for (std::size_t at = 0; at < line.size();) {
            const ssize_t n = ::write(STDERR_FILENO, line.data() + at, line.size() - at);
            if (n <= 0 && errno != EINTR) break;
            if (n > 0) at += static_cast<std::size_t>(n);
        }
    }
    auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
    greg_t* r = uc->uc_mcontext.gregs;
    r[REG_RAX] = rerun ? cspd_sandbox_syscall6(info->si_syscall, r[REG_RDI], r[REG_RSI], r[REG_RDX], r[REG_R10],
                                               r[REG_R8], r[REG_R9])
                       : -EPERM;
#elif defined(__aarch64__)
    uc->uc_mcontext.regs[0] = static_cast<unsigned long>(-EPERM);  // no gadget here: log-only denies too
#endif
    errno = saved_errno;
}

/// A seccomp program built front to back, with named places jumped to from anywhere (JA takes a
/// 32-bit offset; a conditional jump only skips the JA that follows it).
class FilterProgram {
public:
    int new_label() {
        labels_.push_back(kUnplaced);
        return static_cast<int>(labels_.size() - 1);
    }
    void place(int label) { labels_[static_cast<std::size_t>(label)] = code_.size(); }
    void jump(int label) {
        fixups_.push_back({code_.size(), static_cast<std::size_t>(label)});
        push(BPF_STMT(BPF_JMP | BPF_JA, 0));
    }
    void load(std::uint32_t offset) { push(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
    void load_nr() { load(offsetof(seccomp_data, nr)); }
    /// If A == k: on to `label`.
    void jump_if(std::uint32_t k, int label) {
        push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
        jump(label);
    }
    /// If A has any of `bits`: on to `label`.
    void jump_if_any(std::uint32_t bits, int label) {
        push(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, bits, 0, 1));
        jump(label);
    }
    /// If A == k: return `action`.
    void return_if(std::uint32_t k, std::uint32_t action) {
        push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
        ret(action);
    }
    void ret(std::uint32_t action) { push(BPF_STMT(BPF_RET | BPF_K, action)); }
    void push(sock_filter instruction) { code_.push_back(instruction); }

    /// The program; throws if a jump leads nowhere or backwards (BPF jumps only forwards).
    std::vector<sock_filter> finish() {
        for (const Fixup& f : fixups_) {
            const std::size_t to = labels_[f.label];
            if (to == kUnplaced || to <= f.at) throw std::logic_error("sandbox filter: a jump to no place ahead");
            code_[f.at].k = static_cast<std::uint32_t>(to - f.at - 1);
        }
        return code_;
    }

private:
    static constexpr std::size_t kUnplaced = ~std::size_t(0);
    struct Fixup {
        std::size_t at;
        std::size_t label;
    };
    std::vector<sock_filter> code_;
    std::vector<std::size_t> labels_;
    std::vector<Fixup> fixups_;
};

constexpr std::uint32_t kNewNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                         CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;

/// What the filter does with one call number: trap it, refuse it with an errno, or look further
/// at its arguments (a block of its own).
struct CallRule {
    std::uint32_t nr;
    enum Kind { trap, refuse, block } kind;
    std::uint32_t value;  // refuse: the errno; block: its label
};

/// Emits a binary search over `rules` (sorted by number) with the call number in A: each subtree
/// ends in a return or a jump, so nothing falls through.
void emit_search(FilterProgram& p, const std::vector<CallRule>& rules, std::size_t lo, std::size_t hi, int trap) {
    if (hi - lo <= 3) {
        for (std::size_t i = lo; i < hi; ++i) {
            const CallRule& rule = rules[i];
            if (rule.kind == CallRule::refuse)
                p.return_if(rule.nr, SECCOMP_RET_ERRNO | rule.value);
            else
                p.jump_if(rule.nr, rule.kind == CallRule::trap ? trap : static_cast<int>(rule.value));
        }
        p.ret(SECCOMP_RET_ALLOW);
        return;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    const int upper = p.new_label();
    p.push(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, rules[mid].nr, 0, 1));
    p.jump(upper);
    emit_search(p, rules, lo, mid, trap);
    p.place(upper);
    emit_search(p, rules, mid, hi, trap);
}

std::vector<sock_filter> build_filter(const CallFilterOptions& options) {
    FilterProgram p;
    const int trap = p.new_label();
    const int clone_block = p.new_label(), socket_block = p.new_label(), sigaction_block = p.new_label(),
              own_memory_block = p.new_label();

    std::vector<CallRule> rules;
    for (const Denied& d : kDenied) rules.push_back({static_cast<std::uint32_t>(d.nr), CallRule::trap, 0});
    if (!options.allow_exec)
        for (const Denied& d : kExec) rules.push_back({static_cast<std::uint32_t>(d.nr), CallRule::trap, 0});
    for (const Denied& d : kPathMetadata) rules.push_back({static_cast<std::uint32_t>(d.nr), CallRule::trap, 0});
    if (!options.allow_exec)
        for (const Denied& d : kPathModes) rules.push_back({static_cast<std::uint32_t>(d.nr), CallRule::trap, 0});
    if (options.deny_path_truncate)
        for (const Denied& d : kPathTruncate) rules.push_back({static_cast<std::uint32_t>(d.nr), CallRule::trap, 0});
    // clone3's flags sit in memory a filter cannot read: ENOSYS makes glibc fall back to clone.
    rules.push_back({SYS_clone3, CallRule::refuse, ENOSYS});
    rules.push_back({SYS_clone, CallRule::block, static_cast<std::uint32_t>(clone_block)});
    rules.push_back({SYS_socket, CallRule::block, static_cast<std::uint32_t>(socket_block)});
    rules.push_back({SYS_rt_sigaction, CallRule::block, static_cast<std::uint32_t>(sigaction_block)});
    for (const long nr : {SYS_process_vm_readv, SYS_process_vm_writev})
        rules.push_back({static_cast<std::uint32_t>(nr), CallRule::block, static_cast<std::uint32_t>(own_memory_block)});
    std::sort(rules.begin(), rules.end(), [](const CallRule& a, const CallRule& b) { return a.nr < b.nr; });

    // Another architecture's calls (int $0x80 on x86_64) would get round every rule below.
    p.load(offsetof(seccomp_data, arch));
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
    p.jump(trap);
    p.load_nr();
#if defined(__x86_64__)
    p.push(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32's numbers
    p.jump(trap);
#endif
    emit_search(p, rules, 0, rules.size(), trap);

    p.place(clone_block);
    p.load(offsetof(seccomp_data, args[0]));
    p.jump_if_any(kNewNamespaces, trap);
    // posix_spawn's vfork runs with every signal blocked (a trap would kill the process):
    // refused plainly, as exec is.
    if (!options.allow_exec && !options.log_only) {
        p.push(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_VFORK, 0, 1));
        p.ret(SECCOMP_RET_ERRNO | EPERM);
    }
    p.ret(SECCOMP_RET_ALLOW);

    // Sockets by allow-list: Unix; IPv4 and IPv6 streams and datagrams (unless no handler needs the
    // network); the netlink route socket getaddrinfo opens. Raw, packet (SOCK_PACKET too), other
    // netlink families, AF_KEY, AF_ALG... are trapped.
    p.place(socket_block);
    const int inet = p.new_label(), netlink = p.new_label();
    p.load(offsetof(seccomp_data, args[0]));
    p.return_if(AF_UNIX, SECCOMP_RET_ALLOW);
    p.jump_if(AF_NETLINK, netlink);
    p.jump_if(AF_INET, inet);
    p.jump_if(AF_INET6, inet);
    p.jump(trap);
    p.place(inet);
    if (options.no_network) p.jump(trap);
    p.load(offsetof(seccomp_data, args[1]));
    p.push(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf));  // the type, without SOCK_NONBLOCK and SOCK_CLOEXEC
    p.return_if(SOCK_STREAM, SECCOMP_RET_ALLOW);
    p.return_if(SOCK_DGRAM, SECCOMP_RET_ALLOW);
    p.return_if(SOCK_SEQPACKET, SECCOMP_RET_ALLOW);
    p.jump(trap);
    p.place(netlink);
    p.load(offsetof(seccomp_data, args[2]));
    p.return_if(NETLINK_ROUTE, SECCOMP_RET_ALLOW);
    p.jump(trap);

    // Nobody takes SIGSYS's handler away: the log and the blame stay.
    p.place(sigaction_block);
    p.load(offsetof(seccomp_data, args[0]));
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGSYS, 1, 0));
    p.ret(SECCOMP_RET_ALLOW);
    p.load(offsetof(seccomp_data, args[1]));  // a query (no new action) is fine: Go's runtime asks
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
    p.load(offsetof(seccomp_data, args[1]) + 4);
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
    p.ret(SECCOMP_RET_ALLOW);
    p.ret(SECCOMP_RET_ERRNO | EPERM);

    // Another process's memory never; this process's own (a handler may read itself so).
    p.place(own_memory_block);
    const auto self = static_cast<std::uint32_t>(::getpid());
    p.load(offsetof(seccomp_data, args[0]));
    p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0));
    p.jump(trap);
    p.load(offsetof(seccomp_data, args[0]) + 4);
    p.jump_if_any(0xffffffffu, trap);
    p.ret(SECCOMP_RET_ALLOW);

    // The trap; log-only lets the host's own syscall instruction through, which runs a trapped call after all.
    p.place(trap);
#if defined(__x86_64__)
    if (options.log_only) {
        const auto ip = reinterpret_cast<std::uint64_t>(cspd_sandbox_syscall_ip);
        p.load(offsetof(seccomp_data, instruction_pointer));
        p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(ip), 0, 3));
        p.load(offsetof(seccomp_data, instruction_pointer) + 4);
        p.push(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(ip >> 32), 0, 1));
        p.ret(SECCOMP_RET_ALLOW);
    }
#endif
    p.ret(SECCOMP_RET_TRAP);
    return p.finish();
}

}  // namespace

bool seccomp_available() noexcept {
    // A mode-filter request with no program fails with EFAULT where filters exist, EINVAL where not.
    return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, nullptr) < 0 && errno == EFAULT;
}

void count_denials_in(SandboxDenials* table) noexcept { g_table.store(table, std::memory_order_relaxed); }

bool install_call_filter(const CallFilterOptions& options, std::string& why) {
    g_log_only = options.log_only;
    struct sigaction action {};
    action.sa_sigaction = on_sigsys;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGSYS, &action, nullptr) != 0) {
        why = std::string("cannot handle SIGSYS: ") + std::strerror(errno);
        return false;
    }
    std::vector<sock_filter> code;
    try {
        code = build_filter(options);
    } catch (const std::exception& e) {
        why = e.what();
        return false;
    }
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

std::uint64_t call_filter_denials() noexcept { return g_denials.load(std::memory_order_relaxed); }

}  // namespace cspd
