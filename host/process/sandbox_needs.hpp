// What a handler asks of the sandbox beyond what every handler has, declared in its NAME.conf
// (or NAME.json), read by the host and never by handler code:
//   sandbox.read    = /srv/maps, /usr/local/share/geo   folders (or files) it reads
//   sandbox.write   = /var/lib/reports                   folders it reads and writes
//   sandbox.exec    = true                               it starts programs
//   sandbox.network = false                              it needs no network
// and, without a word from it, the folder its file leads into when NAME.so is a link out of the
// handlers folder.
//
// A worker's sandbox is the union of what the handlers in its folder asked when it started (the
// kernel's rules only ever narrow). A new version that asks for more is refused by the workers
// that run, which ask the master for successors: those start with the wider sandbox and load it
// (a graceful succession, as --worker-max-rss does). What no sandbox grants (--certs, a relative
// path) is refused for good, with the reason.
#pragma once

#include "process/file_rules.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace cspd {

struct SandboxNeeds {
    std::vector<std::filesystem::path> read, write;  ///< absolute, normalised
    bool exec = false;
    bool network = true;  ///< false only if declared so
    std::string error;    ///< a declaration that cannot be taken, and why; empty: none

    /// The union of both (network: if either needs it).
    void add(const SandboxNeeds& other);
    /// "read /srv/maps, exec": for the log and /-/status; empty when it asks for nothing.
    std::string describe() const;
};

/// What handler `name` asks for: its NAME.conf's sandbox.* keys in `folder`, and the folder its
/// `file` leads into if that is a link. `never`: paths no declaration may reach (--certs).
SandboxNeeds needs_of(const std::filesystem::path& folder, const std::string& name, const std::filesystem::path& file,
                      const std::vector<std::filesystem::path>& never);

/// The union over every handler file in `folder` now (NAME.so, and NAME.c / NAME.cpp with `sources`).
/// Declarations in error are left out of it (their handlers are refused when they load).
SandboxNeeds needs_of_folder(const std::filesystem::path& folder, bool sources,
                             const std::vector<std::filesystem::path>& never);

/// Adds what `needs` asks to `rules` (read, write).
void grant(FileRules& rules, const SandboxNeeds& needs);

/// What of `needs` a process with `rules`, `exec` and `network` does not have, for a refusal;
/// empty if it has it all.
std::string beyond(const SandboxNeeds& needs, const FileRules& rules, bool exec, bool network);

}  // namespace cspd
