// Who runs handler code. Started as root, cspd keeps root only in the master (listening
// sockets, signals, supervision) and the key process (private keys); workers and the vetting
// processes they start run as --user, or as nobody when none is named, and never as root
// unless --user root says so. Started as anyone else, nothing changes.
#pragma once

#include <sys/types.h>

#include "tls/certificate_folder.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace cspd {

struct Config;

struct WorkerAccount {
    std::string name;
    uid_t uid = 0;
    gid_t gid = 0;
    bool change = false;  ///< false: workers stay who cspd was started as
};

/// The account workers run as, for a process running as `euid`. Throws std::runtime_error if
/// --user names nobody known.
WorkerAccount worker_account(const Config& config, uid_t euid);

/// The account handler code runs as, to keep out of private keys (tls/certificate_folder.hpp):
/// none when workers stay who cspd was started as, or run as root. Throws as worker_account.
std::optional<KeyOutsider> key_outsider(const Config& config);

/// Becomes `account` for good: supplementary groups, group, user; then checks that root cannot
/// be had back. Throws std::runtime_error with the reason.
void become(const WorkerAccount& account);

/// Why `account` could not list the folder `path` (every folder above it must let it through,
/// and the folder itself let it read), or empty. Judged from the modes, owners and the account's
/// groups, as the kernel would (ACLs aside).
std::string folder_access_problem(const std::filesystem::path& path, const WorkerAccount& account);

/// Why the folder of `log_file` is unsafe for a master started as root, or empty: `account` can
/// write in it, so handler code could plant a link where the file is reopened on SIGUSR1.
std::string log_folder_problem(const std::filesystem::path& log_file, const WorkerAccount& account);

/// The start-up line that says who runs handler code (or that --user is ignored).
void say_who_runs_handlers(const Config& config, const WorkerAccount& account);

/// Throws std::runtime_error, naming the folder, if `account` cannot read the handlers or www folder.
void check_workers_can_read(const Config& config, const WorkerAccount& account);

/// Gives `path` (if it exists, and it is not a symbolic link) to `account`, so that its workers
/// can write in it or reopen it. Logs why not on failure.
void hand_over(const std::filesystem::path& path, const WorkerAccount& account);

}  // namespace cspd
