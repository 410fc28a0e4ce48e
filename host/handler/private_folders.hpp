// Each serving process keeps its private copies of handler files (and what --compile builds) in
// a folder of its own, "cspd-PID-XXXXXX" under TMPDIR (or /tmp), removed when it exits cleanly.
// A process that dies leaves its folder behind: the master removes it after the reap, and a
// server starting removes those of processes that are gone.
//
// A pid alone does not say whose a folder is (servers in other pid namespaces may share TMPDIR):
// its owner holds an flock on the folder's ".owner" file for as long as it lives, and a folder is
// only removed when that lock can be taken (the kernel drops it when its holder dies).
#pragma once

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace cspd {

/// TMPDIR, or /tmp.
std::filesystem::path private_folder_parent();
/// The mkdtemp(3) pattern for process `pid`'s folder under `parent`.
std::string private_folder_pattern(const std::filesystem::path& parent, pid_t pid);
/// Marks `folder` as this process's for as long as the returned descriptor stays open; an
/// empty descriptor if it cannot (the folder is then removed only by its pid).
UniqueFd claim_private_folder(const std::filesystem::path& folder);
/// This process's own folder under `parent`, claimed while it lives and removed with it.
class PrivateFolder {
public:
    /// Throws if it cannot be made.
    explicit PrivateFolder(const std::filesystem::path& parent = private_folder_parent());
    ~PrivateFolder();
    PrivateFolder(const PrivateFolder&) = delete;
    PrivateFolder& operator=(const PrivateFolder&) = delete;

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
    UniqueFd owner_lock_;
};

/// Removes what `pid` (a process this one reaped) left under `parent`; how many folders.
std::size_t remove_private_folders_of(pid_t pid, const std::filesystem::path& parent = private_folder_parent());
/// Removes the folders, owned by this user, of processes that no longer run (an earlier run that
/// crashed or was killed); how many.
std::size_t remove_orphaned_private_folders(const std::filesystem::path& parent = private_folder_parent());

/// Folders owned by `uid` (the workers' account, when the master is root) are removed too, as
/// well as this user's.
void sweep_folders_of_user(uid_t uid);

}  // namespace cspd
