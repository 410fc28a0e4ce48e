// Where vetting processes come from. Starting `cspd __vet` afresh costs an exec and the dynamic
// linking of cspd -- about 13 ms of CPU on this project's machines, taken from serving ten times
// a second when handlers are replaced that often. Instead, each worker starts one small process
// (`cspd __vet-server`) once, and asks it for each vetting process: it forks one, already started,
// for about a millisecond. The worker still watches the child itself (its report pipe, its
// deadline, kill); the fork server tells it the child's pid, then its exit status once reaped.
// Should the fork server be gone or fail, the caller starts `cspd __vet` itself, as before.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <sys/types.h>

namespace boost::asio {
class io_context;
}

namespace cspd {

/// Where a vetting process finds its report pipe: the fork server puts it there, the vetting
/// code writes its verdict to it.
inline constexpr int kVettingReportFd = 3;

class VettingForkServer {
public:
    /// Receives the child's waitpid status, on the io_context's thread; none if the fork server
    /// was lost before it said (the child died with it, how is unknown).
    using Ended = std::function<void(std::optional<int> status)>;

    explicit VettingForkServer(boost::asio::io_context& io);
    ~VettingForkServer();
    VettingForkServer(const VettingForkServer&) = delete;
    VettingForkServer& operator=(const VettingForkServer&) = delete;

    /// Forks a vetting process for `name` whose descriptor 3 is `report_fd`; `ended` is called once
    /// it has been reaped. Its pid, or -1 if the fork server cannot (then `error` says why).
    pid_t start(const std::string& name, const std::filesystem::path& image, const std::filesystem::path& config_folder,
                unsigned workers, int report_fd, Ended ended, std::string& error);
    /// Forgets `pid`'s Ended (its process was killed and is no longer waited for).
    void forget(pid_t pid);
    /// Starts the fork server now rather than at the first vetting: a sandboxed worker does so
    /// before its call filter denies starting programs. `call_filter` ("deny", "exec", "log"; empty:
    /// none) is installed in the fork server, so every vetting process has it. False, with `error`.
    bool start_now(const std::string& call_filter, std::string& error);

    struct State;

private:
    std::unique_ptr<State> state_;
};

/// The fork server's side: `cspd __vet-server [CALL-FILTER]`, its socket on descriptor 3.
int run_vetting_fork_server(int argc, char** argv);

}  // namespace cspd
