// What the sandbox's call filter adds to each system call a serving process makes: the same
// calls timed in a child without the filter, then in a child with it (a filter cannot be taken
// back, hence the children). Prints nanoseconds a call and the difference, per call, as the
// median of interleaved rounds. Multiplied by the calls a request makes (strace -c on a worker),
// it is the sandbox's share of a request's CPU (bench/results/sandbox.md).
#include "process/call_filter.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kCalls = 2'000'000;
constexpr int kRounds = 7;

/// Nanoseconds a call of each kind, in this process as it is.
std::vector<double> time_calls() {
    int pair[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair);
    char byte = 0;
    const auto per_call = [](auto call) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kCalls; ++i) call();
        return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kCalls;
    };
    std::vector<double> out;
    out.push_back(per_call([] { ::syscall(SYS_getppid); }));                               // allowed at once
    out.push_back(per_call([&] { (void)!::recv(pair[0], &byte, 1, MSG_DONTWAIT); }));      // EAGAIN: a loop's read
    out.push_back(per_call([&] {                                                           // a loop's write, then its read
        (void)!::send(pair[1], &byte, 1, MSG_NOSIGNAL);
        (void)!::recv(pair[0], &byte, 1, 0);
    }));
    out.push_back(per_call([] { ::syscall(SYS_epoll_pwait, -1, nullptr, 0, 0, nullptr, 8); }));  // EBADF, far in the search
    ::close(pair[0]);
    ::close(pair[1]);
    return out;
}

/// time_calls() in a child, with the call filter installed first if `filtered`.
std::vector<double> in_child(bool filtered) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::string why;
        if (filtered && !cspd::install_call_filter({}, why)) ::_exit(1);
        const std::vector<double> times = time_calls();
        (void)!::write(pipe_fds[1], times.data(), times.size() * sizeof(double));
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::vector<double> times(4);
    const ssize_t got = ::read(pipe_fds[0], times.data(), times.size() * sizeof(double));
    ::close(pipe_fds[0]);
    ::waitpid(pid, nullptr, 0);
    if (got != static_cast<ssize_t>(times.size() * sizeof(double))) return {};
    return times;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main() {
    const char* names[] = {"getppid", "recv (EAGAIN)", "send + recv, 1 byte", "epoll_pwait (EBADF)"};
    std::vector<std::vector<double>> plain(4), filtered(4);
    for (int round = 0; round < kRounds; ++round) {  // interleaved: a drifting machine hits both alike
        const std::vector<double> a = in_child(false), b = in_child(true);
        if (a.empty() || b.empty()) {
            std::fprintf(stderr, "sandbox_cost: a child failed (no seccomp here?)\n");
            return 1;
        }
        for (int k = 0; k < 4; ++k) plain[k].push_back(a[k]), filtered[k].push_back(b[k]);
    }
    std::printf("| call | ns without the filter | ns with it | added ns |\n|---|---:|---:|---:|\n");
    for (int k = 0; k < 4; ++k)
        std::printf("| %s | %.1f | %.1f | %.1f |\n", names[k], median(plain[k]), median(filtered[k]),
                    median(filtered[k]) - median(plain[k]));
    return 0;
}
