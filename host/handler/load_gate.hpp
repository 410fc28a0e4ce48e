// What a loader asks before it lets a new handler version into this process: has it been
// fenced off (it crashed while loading or in init somewhere), and does it load, init and
// clean up without faulting, hanging or exiting when tried somewhere it cannot hurt? The
// handler layer asks; the process layer answers (process/handler_vetting: a short-lived
// process that tries it).
#pragma once

#include "handler/version.hpp"

#include <filesystem>
#include <string>

namespace cspd {

struct GateVerdict {
    bool pass = true;
    bool fenced = false;  ///< it faulted, hung or exited: refused for good, whatever its file's name
    std::string reason;   ///< why not, for the log and /-/status
};

class LoadGate {
public:
    /// `image` is a private copy of the file, whose identity (size, hash) is `file`; its
    /// configuration is in `config_folder`.
    virtual GateVerdict check(const std::string& name, const std::filesystem::path& image,
                              const HandlerFileIdentity& file, const std::filesystem::path& config_folder) = 0;

protected:
    ~LoadGate() = default;
};

}  // namespace cspd
