#include "process/lifecycle_signals.hpp"

#include <pthread.h>

#include <initializer_list>

namespace cspd {

sigset_t lifecycle_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&set, signal);
    return set;
}

void block_lifecycle_signals() {
    const sigset_t set = lifecycle_signals();
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void unblock_lifecycle_signals() {
    const sigset_t set = lifecycle_signals();
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace cspd
