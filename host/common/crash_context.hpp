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

/// The client whose request a thread is answering, owed the answers already built for it.
struct CrashClient {
    int fd = -1;
    bool head = false;                    ///< the 500 it gets has no body
    const std::string* queued = nullptr;  ///< answers complete before this request, or null
    std::size_t queued_size = 0;
};

struct ThreadCrashContext {
    const HandlerLabel* running = nullptr;
    std::atomic<std::uint32_t>* crash_flag = nullptr;  ///< this thread's loop slot, if any
    CrashClient client;
};

/// This thread's record.
ThreadCrashContext& this_thread_crash_context() noexcept;

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

/// Marks the handler running on this thread around one call; named in the crash report.
class RunningHandler {
public:
    explicit RunningHandler(const HandlerLabel& handler) noexcept { this_thread_crash_context().running = &handler; }
    ~RunningHandler() { this_thread_crash_context().running = nullptr; }
    RunningHandler(const RunningHandler&) = delete;
    RunningHandler& operator=(const RunningHandler&) = delete;
};

/// Gives the calling thread its own alternate signal stack, so that a stack overflow on it can
/// still be reported. Every thread that runs handlers calls it once.
void install_thread_signal_stack();

}  // namespace cspd
