// A real child process for the process layer's tests to signal: it waits until it is killed.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cspd::test {

class WaitingChild {
public:
    WaitingChild() {
        pid_ = ::fork();
        if (pid_ == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            const rlimit no_core{0, 0};
            ::setrlimit(RLIMIT_CORE, &no_core);  // an abort here leaves no core file
            for (;;) ::pause();
        }
    }
    ~WaitingChild() {
        if (!reaped_ && pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    WaitingChild(const WaitingChild&) = delete;
    WaitingChild& operator=(const WaitingChild&) = delete;

    pid_t pid() const { return pid_; }
    /// The signal that ended it, waiting for its end (0 if it exited instead).
    int ended_by() {
        int status = 0;
        if (::waitpid(pid_, &status, 0) != pid_) return -1;
        reaped_ = true;
        return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    /// True if it still runs (nothing ended it).
    bool running() {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
        reaped_ = true;
        return false;
    }

private:
    pid_t pid_ = -1;
    bool reaped_ = false;
};

}  // namespace cspd::test
