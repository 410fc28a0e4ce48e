// One child process started with posix_spawn(3): what it is given (descriptors at fixed numbers,
// files opened, a signal mask, a process group of its own), then one start. The file actions and
// attributes live as long as this object, whichever way it ends. Every process cspd starts goes
// through here: workers, the key process, vetting, compilers.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace cspd {

class Spawn {
public:
    Spawn();
    ~Spawn();
    Spawn(const Spawn&) = delete;
    Spawn& operator=(const Spawn&) = delete;

    /// The child has `fd` as descriptor `as` (dup2, so close-on-exec is dropped on the copy).
    Spawn& give(int fd, int as);
    /// The child has `path` open as descriptor `as`.
    Spawn& open(int as, const char* path, int flags, mode_t mode = 0);
    /// The child starts with these signals blocked (an empty set: none).
    Spawn& signal_mask(const sigset_t& mask);
    /// The child leads a process group of its own (its descendants can be killed together).
    Spawn& own_process_group();

    /// Runs `program` (a path, or a name looked up in PATH with `search_path`) with `args` as its
    /// argv (the first is its name) and `environment` (null: this process's). The child's pid, or
    /// -1 with `error` set to the errno value that says why.
    pid_t start(const char* program, const std::vector<std::string>& args, int& error, bool search_path = false,
                char* const* environment = nullptr);

private:
    posix_spawn_file_actions_t actions_;
    posix_spawnattr_t attributes_;
    short flags_ = 0;
};

}  // namespace cspd
