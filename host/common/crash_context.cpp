#include "common/crash_context.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cspd {
namespace {
constexpr std::size_t kAlternateStackBytes = 64 * 1024;
thread_local ThreadCrashContext context;
std::atomic<std::uint32_t>* process_flag = nullptr;
DeathBlame* death_blame = nullptr;
pid_t death_blame_owner = 0;  // the process that set it: a handler's forked child inherits the pointer
std::atomic<bool> death_blamed{false};
}  // namespace

void set_process_death_blame(DeathBlame* blame) noexcept {
    death_blame = blame;
    death_blame_owner = static_cast<pid_t>(::syscall(SYS_getpid));
}

void blame_for_this_death(const HandlerLabel& handler, HandlerPhase phase, std::uint32_t how) noexcept {
    // A process a handler forked (which then exits, or faults) is not the worker: it blames nobody.
    if (!death_blame || static_cast<pid_t>(::syscall(SYS_getpid)) != death_blame_owner) return;
    if (death_blamed.exchange(true)) return;
    std::size_t i = 0;
    for (; handler.name[i] && i + 1 < sizeof death_blame->name; ++i) death_blame->name[i] = handler.name[i];
    death_blame->name[i] = '\0';
    death_blame->sequence = handler.sequence;
    death_blame->size = handler.size;
    death_blame->content_hash = handler.content_hash;
    death_blame->how = how;
    death_blame->phase.store(static_cast<std::uint32_t>(phase), std::memory_order_release);
}

ThreadCrashContext& this_thread_crash_context() noexcept { return context; }

const char* phase_text(HandlerPhase phase) noexcept {
    switch (phase) {
    case HandlerPhase::load: return "while loading (static constructors)";
    case HandlerPhase::init: return "in init";
    case HandlerPhase::call: return "in a call";
    case HandlerPhase::cleanup: return "in cleanup";
    case HandlerPhase::unload: return "while unloading (static destructors)";
    case HandlerPhase::thread: return "on a thread of its own";
    case HandlerPhase::none: break;
    }
    return "";
}

void set_process_crash_flag(std::atomic<std::uint32_t>* flag) noexcept { process_flag = flag; }
std::atomic<std::uint32_t>* process_crash_flag() noexcept { return process_flag; }

void install_thread_signal_stack() {
    // Never freed: the thread may crash until its very end.
    thread_local char* stack_memory = nullptr;
    if (stack_memory) return;
    // One may exist already (the sanitizers give every thread theirs, and free it themselves).
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;
    stack_memory = new char[kAlternateStackBytes];
    stack_t stack{};
    stack.ss_sp = stack_memory;
    stack.ss_size = kAlternateStackBytes;
    ::sigaltstack(&stack, nullptr);
}

}  // namespace cspd
