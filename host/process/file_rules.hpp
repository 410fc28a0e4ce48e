// The file half of the sandbox: a Landlock ruleset that lists what a serving process may open,
// beneath which folders, and how; everything else is refused by the kernel with EACCES, whatever
// the account's own permissions say (a worker run with --user root cannot read /etc/shadow).
//
// Landlock grows by ABI: 1 files, 2 moving files between folders (refer), 3 truncate, 6 scoped
// signals (a process may signal only its own domain and the ones made below it: a worker reaches
// its vetting and compiler children, never a sibling worker or the master). Rules are applied as
// far as the running kernel knows them; what it lacks is said once at start.
//
// Landlock binds the calling thread only (and what it starts later): apply() must run before the
// process starts its second thread.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cspd {

/// Landlock's ABI version in this kernel; 0: none (not built in, or off at boot).
int landlock_abi() noexcept;

struct FileRules {
    /// Read files and list folders beneath each.
    std::vector<std::filesystem::path> read;
    /// As `read`, and run programs from them (the system's programs and libraries).
    std::vector<std::filesystem::path> run;
    /// Read, write, create, rename, remove beneath each.
    std::vector<std::filesystem::path> write;
    /// Open files beneath for writing and create them, never read (log files: appended to, reopened).
    std::vector<std::filesystem::path> append;
    /// Signals only within this domain (Landlock 6).
    bool scope_signals = true;
};

/// `path` is `folder` or lies beneath it (both absolute and normalised; no link is followed).
bool is_beneath(const std::filesystem::path& path, const std::filesystem::path& folder);
/// `path` absolute, its links resolved as far as it exists, without a trailing separator.
std::filesystem::path normal_path(const std::filesystem::path& path);

/// Adds rules for the world-readable parts of `folder` (`/etc`): a file or folder the account
/// could read only by being its owner or in its group (shadow, private keys) gets no rule, nor
/// does anything at, beneath or above one of `never`. A link leads to a rule for its target,
/// unless the target lies in a folder `rules` reads already.
void add_world_readable(FileRules& rules, const std::filesystem::path& folder,
                        const std::vector<std::filesystem::path>& never);

/// Restricts this thread (and every thread and process it starts from now) to `rules`. A path
/// that does not exist is skipped. False, with `why`, if the kernel refuses; nothing changed then.
bool apply_file_rules(const FileRules& rules, std::string& why);

}  // namespace cspd
