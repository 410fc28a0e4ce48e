// What a watcher asks before it lets a new handler version into this process: has it been
// fenced off (it crashed while loading or in init somewhere), and does it load, init and
// clean up without faulting, hanging or exiting when tried somewhere it cannot hurt? The
// handler layer asks; the process layer answers (process/handler_vetting: a short-lived
// process that tries it). The answer may take up to --init-timeout per phase, so it comes
// back later, on the asking thread: the asker goes on meanwhile.
#pragma once

#include "handler/version.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace cspd {

struct GateVerdict {
    bool pass = true;
    bool fenced = false;  ///< it faulted, hung or exited: refused for good, whatever its file's name
    std::string reason;   ///< why not, for the log and /-/status
};

class LoadGate {
public:
    using Done = std::function<void(GateVerdict)>;

    /// Asks about `image`, a private copy of the file whose identity (size, hash) is `file`, its
    /// configuration in `config_folder`. `done` runs once with the verdict -- perhaps before this
    /// returns -- unless the check is cancelled first. One check per name at a time.
    virtual void check(const std::string& name, const std::filesystem::path& image, const HandlerFileIdentity& file,
                       const std::filesystem::path& config_folder, Done done) = 0;
    /// Ends `name`'s check, if one runs, without its `done`: a newer file superseded it, or the file went.
    virtual void cancel(const std::string& name) = 0;
    /// Cancels every check (at stop).
    virtual void cancel_all() = 0;

protected:
    ~LoadGate() = default;
};

}  // namespace cspd
