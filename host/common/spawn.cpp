#include "common/spawn.hpp"

extern char** environ;

namespace cspd {

Spawn::Spawn() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attributes_);
}

Spawn::~Spawn() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attributes_);
}

Spawn& Spawn::give(int fd, int as) {
    posix_spawn_file_actions_adddup2(&actions_, fd, as);
    return *this;
}

Spawn& Spawn::open(int as, const char* path, int flags, mode_t mode) {
    posix_spawn_file_actions_addopen(&actions_, as, path, flags, mode);
    return *this;
}

Spawn& Spawn::signal_mask(const sigset_t& mask) {
    posix_spawnattr_setsigmask(&attributes_, &mask);
    flags_ |= POSIX_SPAWN_SETSIGMASK;
    return *this;
}

Spawn& Spawn::own_process_group() {
    posix_spawnattr_setpgroup(&attributes_, 0);
    flags_ |= POSIX_SPAWN_SETPGROUP;
    return *this;
}

pid_t Spawn::start(const char* program, const std::vector<std::string>& args, int& error, bool search_path,
                   char* const* environment) {
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    posix_spawnattr_setflags(&attributes_, flags_);
    pid_t pid = -1;
    char* const* env = environment ? environment : environ;
    error = search_path ? ::posix_spawnp(&pid, program, &actions_, &attributes_, argv.data(), env)
                        : ::posix_spawn(&pid, program, &actions_, &attributes_, argv.data(), env);
    return error == 0 ? pid : -1;
}

}  // namespace cspd
