// What this thread is doing, kept for the crash reporter: the handler it is running,
// the client it is answering, where to flag that it crashed. The request path writes
// these (a thread-local store each); the fatal-signal handler (process/crash_reporter)
// reads them. Nothing here reports anything: it only records.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace cspd {

/// How a handler version names itself in a crash report. Owned by the version; plain
/// data, so a signal handler can read it.
struct HandlerLabel {
    const char* name = "";
    std::uint64_t sequence = 0;
    std::uint64_t size = 0;
    std::uint64_t content_hash = 0;
};

/// Which part of a handler's life a thread runs, for the crash report and for blame.
enum class HandlerPhase : std::uint32_t {
    none = 0,
    load = 1,     ///< dlopen: the library's static constructors
    init = 2,     ///< its init hook
    call = 3,     ///< a request
    cleanup = 4,  ///< its cleanup hook
    unload = 5,   ///< dlclose: static destructors
    thread = 6,   ///< a thread of its own (found from the faulting code's address)
};

/// "while loading", "in init", ... for log lines; plain text, safe in a signal handler.
const char* phase_text(HandlerPhase phase) noexcept;

/// The client whose request a thread is answering, owed the answers already built for it.
struct CrashClient {
    int fd = -1;
    bool head = false;                    ///< the 500 it gets has no body
    const std::string* queued = nullptr;  ///< answers complete before this request, or null
    std::size_t queued_size = 0;
};

struct ThreadCrashContext {
    const HandlerLabel* running = nullptr;
    HandlerPhase phase = HandlerPhase::none;
    std::atomic<std::uint32_t>* crash_flag = nullptr;  ///< this thread's loop slot, if any
    CrashClient client;
};

/// This thread's record.
ThreadCrashContext& this_thread_crash_context() noexcept;

/// Who a dying process blames, for its master to read once it is dead: filled once, by the
/// thread that brings the process down (the crash reporter, or the exit hook). Lives in the
/// shared segment; plain data and one atomic, so a signal handler can fill it.
struct DeathBlame {
    std::atomic<std::uint32_t> phase{0};  ///< a HandlerPhase; 0: nobody blamed. Stored last.
    std::uint32_t how = 0;                ///< the signal, or 0 for exit()
    char name[128] = {};
    std::uint64_t sequence = 0, size = 0, content_hash = 0;
};

/// Where this process records its death's blame (its first loop slot). Once, at start.
void set_process_death_blame(DeathBlame* blame) noexcept;
/// Records `handler`, in `phase`, as the cause of this process's death; the first call wins, and
/// only in the process that set the blame's place (not in a child a handler forked).
/// Async-signal-safe.
void blame_for_this_death(const HandlerLabel& handler, HandlerPhase phase, std::uint32_t how) noexcept;

/// Set when a thread with no crash flag of its own crashes, so the master blames no handler.
void set_process_crash_flag(std::atomic<std::uint32_t>* flag) noexcept;
std::atomic<std::uint32_t>* process_crash_flag() noexcept;

/// Where this thread's crash is recorded for the master (its loop's slot). Once per loop thread.
inline void set_crash_flag(std::atomic<std::uint32_t>* flag) noexcept { this_thread_crash_context().crash_flag = flag; }

/// The client this thread answers now (`queued` may be null); -1 clears it. Only for a client
/// with nothing else in flight, since the 500 would overtake it.
inline void set_crash_client(int fd, bool head, const std::string* queued = nullptr) noexcept {
    this_thread_crash_context().client = {fd, head, queued, queued ? queued->size() : 0};
}

/// Marks the handler running on this thread around one call (or another phase of its life);
/// named in the crash report. Nests: the mark it replaced comes back after it.
class RunningHandler {
public:
    explicit RunningHandler(const HandlerLabel& handler, HandlerPhase phase = HandlerPhase::call) noexcept
        : outer_(this_thread_crash_context().running), outer_phase_(this_thread_crash_context().phase) {
        ThreadCrashContext& context = this_thread_crash_context();
        context.running = &handler;
        context.phase = phase;
    }
    ~RunningHandler() {
        ThreadCrashContext& context = this_thread_crash_context();
        context.running = outer_;
        context.phase = outer_phase_;
    }
    RunningHandler(const RunningHandler&) = delete;
    RunningHandler& operator=(const RunningHandler&) = delete;

private:
    const HandlerLabel* outer_;
    HandlerPhase outer_phase_;
};

/// Gives the calling thread its own alternate signal stack, so that a stack overflow on it can
/// still be reported. Every thread that runs handlers calls it once.
void install_thread_signal_stack();

}  // namespace cspd
