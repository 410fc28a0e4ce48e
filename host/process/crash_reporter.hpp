// When a handler crashes the process (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), say
// which one before dying: the handler's name and file version, the signal, and a
// symbolized backtrace, on stderr. What each thread was doing comes from its
// common/crash_context record. The signal is then re-raised with its default action,
// so a supervisor sees the real cause of death.
#pragma once

namespace cspd {

/// Installs the signal handlers (on an alternate stack, so a stack overflow is reported too).
void install_crash_reporter();

/// A handler that calls exit() or quick_exit() during a call (or another marked phase) is
/// named in the log and blamed for its worker's death. _exit() and _Exit() run no hook: the
/// executable's own definitions of them (process/exit_interposer.cpp) blame instead.
void install_exit_blame();

/// If this thread runs a handler, names it in the log as calling `how` ("exit()") and blames it for
/// this process's death. Uses snprintf: safe enough at exit, not in a signal handler.
void blame_exit_in_handler(const char* how) noexcept;

}  // namespace cspd
