#include "process/spawn_self.hpp"

#include "common/spawn.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace cspd {

pid_t spawn_self(const std::vector<std::string>& args, int fd_as_3, std::string& error) {
    std::vector<std::string> words{"cspd"};
    words.insert(words.end(), args.begin(), args.end());
    sigset_t none;
    sigemptyset(&none);
    Spawn spawn;
    spawn.give(fd_as_3, 3).open(STDIN_FILENO, "/dev/null", O_RDONLY).signal_mask(none);
    int failed = 0;
    const pid_t pid = spawn.start("/proc/self/exe", words, failed);
    if (pid < 0) error = std::strerror(failed);
    return pid;
}

}  // namespace cspd
