#include "common/crash_context.hpp"

#include <signal.h>

namespace cspd {
namespace {
constexpr std::size_t kAlternateStackBytes = 64 * 1024;
thread_local ThreadCrashContext context;
std::atomic<std::uint32_t>* process_flag = nullptr;
}  // namespace

ThreadCrashContext& this_thread_crash_context() noexcept { return context; }

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
