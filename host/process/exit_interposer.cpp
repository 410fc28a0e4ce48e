// _exit() and _Exit() as a handler reaches them: the executable defines both and exports them
// (see host/CMakeLists.txt), so a handler's call binds here before libc. The thread's handler
// mark -- on an event loop, a blocking pool's thread, in init -- is blamed for the death as
// exit() is, then the process ends as libc's would. The host's own calls (no mark) just end it.
// Linked into the cspd executable only: a test binary keeps libc's.
#include "process/crash_reporter.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace {
[[noreturn]] void end_process(int status) noexcept {
    for (;;) ::syscall(SYS_exit_group, status);
}
}  // namespace

extern "C" {
void _exit(int status) {
    cspd::blame_exit_in_handler("_exit()");
    end_process(status);
}

void _Exit(int status) noexcept {
    cspd::blame_exit_in_handler("_Exit()");
    end_process(status);
}
}
