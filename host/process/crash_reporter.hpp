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
/// named in the log and blamed for its worker's death. (_exit() runs no hook: the master
/// blames it from the call's mark.)
void install_exit_blame();

}  // namespace cspd
