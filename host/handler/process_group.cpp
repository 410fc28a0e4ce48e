#include "handler/process_group.hpp"

#include "common/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>

namespace cspd {

pid_t spawn_in_own_group(std::vector<std::string>& args, const std::filesystem::path& log, int& error) {
    Spawn spawn;
    spawn.open(1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600).give(1, 2).open(0, "/dev/null", O_RDONLY);
    spawn.own_process_group();
    return spawn.start(args.front().c_str(), args, error, true);
}

bool wait_within(pid_t pid, std::chrono::seconds limit, int& status) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR)) return true;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace cspd
