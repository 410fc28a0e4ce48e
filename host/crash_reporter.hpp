// When a handler crashes the process (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), say
// which one before dying: the handler's name and file version, the signal, and a
// symbolized backtrace, on stderr. The signal is then re-raised with its default action,
// so a supervisor sees the real cause of death.
#pragma once

#include "handler_version.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace cspd {

/// Installs the signal handlers (on an alternate stack, so a stack overflow is reported too).
void install_crash_reporter();
/// Gives the calling thread its own alternate signal stack (each event loop thread calls it).
void install_thread_signal_stack();
/// Set when a thread without a loop slot crashes, so the master blames no handler for it.
void set_process_crash_flag(std::atomic<std::uint32_t>* flag) noexcept;

/// Where this thread's crash is recorded for the master (its loop's slot), so that a crash is
/// blamed on the handler of the thread that faulted. Set once per loop thread.
void set_crash_flag(std::atomic<std::uint32_t>* flag) noexcept;

/// The client whose request this thread is answering, so a crash can still send it the answers
/// already built for it (`queued`, may be null) and a 500 before the process dies; -1 clears it.
/// `head`: the 500 has no body. Only for a client with nothing else in flight.
void set_crash_client(int fd, bool head, const std::string* queued = nullptr) noexcept;

/// Marks the handler running on this thread for the crash report; a nullptr clears it.
/// Cheap enough for every request: one thread-local store.
void set_running_handler(const HandlerVersion* handler) noexcept;

/// RAII form of set_running_handler around one handler call.
class RunningHandler {
public:
    explicit RunningHandler(const HandlerVersion& handler) noexcept { set_running_handler(&handler); }
    ~RunningHandler() { set_running_handler(nullptr); }
    RunningHandler(const RunningHandler&) = delete;
    RunningHandler& operator=(const RunningHandler&) = delete;
};

} // namespace cspd
