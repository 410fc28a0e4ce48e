// One vetting process (`cspd __vet NAME FILE CONFIG_FOLDER WORKERS`), watched from an
// io_context: its report pipe is read as it arrives, each phase it enters gets the whole
// time limit, and one past it is killed. Its run ends once it has exited and its report is
// read -- even if a process it started holds the pipe open. Nothing here waits, but for the
// fork server's answer to a start (a fork: about a millisecond) and the reaping of a child
// cancel() killed.
#pragma once

#include "common/crash_context.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <memory>
#include <string>

#include <sys/types.h>

namespace boost::asio {
class io_context;
}

namespace cspd {

/// What the child said, a line each: "load", "init", "cleanup", then "ok" or "refused REASON";
/// and how it ended.
struct VettingReport {
    HandlerPhase phase = HandlerPhase::none;  ///< the last phase it entered
    bool ok = false;
    bool refused = false;
    std::string refusal;
    bool timed_out = false;
    int status = 0;       ///< waitpid's
    std::string error;    ///< the process could not be started (nothing was tried)
    double elapsed_ms = 0;
};

class VettingForkServer;

class VettingProcess : public std::enable_shared_from_this<VettingProcess> {
public:
    using Done = std::function<void(const VettingReport&)>;

    /// Starts the child -- forked by `forks` if given and able, else started afresh; `done` runs once
    /// on `io`'s thread when it has ended (or could not start), unless cancel() comes first.
    static std::shared_ptr<VettingProcess> start(boost::asio::io_context& io, VettingForkServer* forks,
                                                 const std::string& name, const std::filesystem::path& image,
                                                 const std::filesystem::path& config_folder, unsigned workers,
                                                 std::chrono::seconds phase_limit, Done done);
    ~VettingProcess();

    /// Kills the child (reaping it, unless its fork server does); `done` never runs.
    void cancel();

    struct State;  // the child, its pipe and timers

private:
    explicit VettingProcess(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace cspd
