#include "process/crash_reporter.hpp"

#include "common/crash_context.hpp"
#include "common/handler_code.hpp"
#include "common/signal_safe_text.hpp"

#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <cstdlib>

namespace cspd {
namespace {

#define CSPD_CRASH_HEAD                                                                                                \
    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 69\r\n"          \
    "Connection: close\r\n\r\n"
#define CSPD_CRASH_BODY "500 Internal Server Error: the handler failed; the server carries on\n"
static_assert(sizeof CSPD_CRASH_BODY - 1 == 69, "Content-Length above");
// One constant each way, so one send(2) carries the whole answer.
constexpr char kCrashAnswer[] = CSPD_CRASH_HEAD CSPD_CRASH_BODY;
constexpr char kCrashAnswerHead[] = CSPD_CRASH_HEAD;
#undef CSPD_CRASH_HEAD
#undef CSPD_CRASH_BODY

// Only async-signal-safe calls below: write(2), send(2), backtrace_symbols_fd (after a warm-up
// call of backtrace at install time, so libgcc is already loaded), sigdescr_np (a pointer into
// a constant table), and text built in a SignalSafeLine on the stack.
void write_all(const char* text, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::write(STDERR_FILENO, text, size);
        if (n <= 0) return;
        text += n;
        size -= static_cast<std::size_t>(n);
    }
}

/// The handler whose code faulted or called into what faulted, for a fault on a thread with no
/// mark (one the handler started): the faulting instruction first, then the backtrace.
const HandlerLabel* handler_in_frames(void* ucontext, void* const* frames, int depth) {
    if (ucontext) {
#if defined(__x86_64__)
        const auto* uc = static_cast<const ucontext_t*>(ucontext);
        if (const HandlerLabel* h = handler_code_at(static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP])))
            return h;
#elif defined(__aarch64__)
        const auto* uc = static_cast<const ucontext_t*>(ucontext);
        if (const HandlerLabel* h = handler_code_at(static_cast<std::uintptr_t>(uc->uc_mcontext.pc))) return h;
#endif
    }
    for (int i = 0; i < depth; ++i)
        if (const HandlerLabel* h = handler_code_at(reinterpret_cast<std::uintptr_t>(frames[i]))) return h;
    return nullptr;
}

/// One line per frame. A frame in a handler's code names the handler's file as the user built it
/// (the private copy it was loaded from is the same bytes, under a name of ours), its hash, and
/// the offset addr2line takes with that file; the host's own frames as glibc writes them.
void write_backtrace(void* const* frames, int depth) {
    for (int i = 0; i < depth; ++i) {
        std::uintptr_t offset = 0;
        const HandlerLabel* handler = handler_code_at(reinterpret_cast<std::uintptr_t>(frames[i]), &offset);
        if (!handler) {
            ::backtrace_symbols_fd(&frames[i], 1, STDERR_FILENO);
            continue;
        }
        SignalSafeLine<384> line;
        line.text(handler->name).text(".so+0x").hex(offset, 1).text(" (handler ").text(handler->name).text(".so#");
        line.number(handler->sequence).text(", ").number(handler->size).text(" bytes, fnv ");
        line.hex(handler->content_hash, 16).text("; addr2line -f -e ").text(handler->name).text(".so 0x");
        line.hex(offset, 1).text(")\n");
        write_all(line.data(), line.size());
    }
}

void on_fatal_signal(int signal, siginfo_t* info, void* ucontext) {
    ThreadCrashContext& context = this_thread_crash_context();
    void* frames[64];
    const int depth = ::backtrace(frames, 64);
    const HandlerLabel* handler = context.running;
    HandlerPhase phase = context.phase;
    if (!handler && (handler = handler_in_frames(ucontext, frames, depth))) phase = HandlerPhase::thread;
    if (handler) blame_for_this_death(*handler, phase, static_cast<std::uint32_t>(signal));
    // Lock-free atomics: async-signal-safe. A thread with no slot of its own (watcher,
    // compiler) flags the process, so that the master blames no handler for it.
    if (context.crash_flag)
        context.crash_flag->store(1, std::memory_order_relaxed);
    else if (std::atomic<std::uint32_t>* flag = process_crash_flag())
        flag->store(1, std::memory_order_relaxed);
    if (CrashClient& client = context.client; client.fd >= 0) {
        // The client is owed answers: those built before this request (pipelining), then a 500,
        // rather than a bare reset when the process dies. send(2) is async-signal-safe; if the
        // socket takes only part of the earlier answers, a 500 after them would corrupt the
        // stream, so it is left out.
        // Only the answers complete before this request began: the current one may be half built.
        bool whole = true;
        if (client.queued && client.queued_size > 0) {
            const ssize_t n = ::send(client.fd, client.queued->data(), client.queued_size, MSG_NOSIGNAL | MSG_DONTWAIT);
            whole = n == static_cast<ssize_t>(client.queued_size);
        }
        if (whole) {
            const char* answer = client.head ? kCrashAnswerHead : kCrashAnswer;
            const std::size_t size = client.head ? sizeof kCrashAnswerHead - 1 : sizeof kCrashAnswer - 1;
            [[maybe_unused]] ssize_t sent = ::send(client.fd, answer, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        client.fd = -1;
    }
    SignalSafeLine<512> line;
    line.text("\ncspd: CRASH: signal ").number(signal).text(" (").text(sigdescr_np(signal)).text(") at address ");
    line.pointer(info ? info->si_addr : nullptr);
    if (handler) {
        line.text(" in handler ").text(handler->name).text(".so#").number(handler->sequence).text(" (");
        line.number(handler->size).text(" bytes, fnv ").hex(handler->content_hash, 16).text(") ");
        line.text(phase_text(phase));
    } else {
        line.text(" outside any handler");
    }
    line.text(", pid ").number(static_cast<int>(::getpid())).text("\n");
    write_all(line.data(), line.size());
    write_all("cspd: backtrace:\n", 17);
    write_backtrace(frames, depth);
    // Die of the same signal, so that the exit status tells the truth.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}

void on_exit_during_handler() { blame_exit_in_handler("exit()"); }

}  // namespace

void blame_exit_in_handler(const char* how) noexcept {
    const ThreadCrashContext& context = this_thread_crash_context();
    const HandlerLabel* handler = context.running;
    if (!handler) return;
    blame_for_this_death(*handler, context.phase, 0);
    // Text built without snprintf: _exit() may be called from a handler's own signal handler.
    SignalSafeLine<384> line;
    line.text("\ncspd: EXIT: handler ").text(handler->name).text(".so#").number(handler->sequence).text(" (");
    line.number(handler->size).text(" bytes, fnv ").hex(handler->content_hash, 16).text(") called ").text(how);
    line.text(" ").text(phase_text(context.phase)).text("; pid ").number(static_cast<int>(::getpid()));
    line.text(" dies with it\n");
    write_all(line.data(), line.size());
}

void install_exit_blame() {
    std::atexit(on_exit_during_handler);
    std::at_quick_exit(on_exit_during_handler);
}

void install_crash_reporter() {
    void* warm_up[1];
    ::backtrace(warm_up, 1);  // loads libgcc now: it must not be loaded inside a signal handler

    install_thread_signal_stack();

    struct sigaction action {};
    action.sa_sigaction = &on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(signal, &action, nullptr);
}

}  // namespace cspd
