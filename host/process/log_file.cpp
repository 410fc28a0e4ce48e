#include "process/log_file.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <system_error>

namespace cspd {

void redirect_stderr_to(const std::filesystem::path& path) {
    // O_APPEND: every process (master and workers) appends whole lines without clobbering each other.
    // O_NOFOLLOW: the master may be root, and a link planted where the file was (after a rotation
    // moved it) must not steer its lines into another file.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "cannot open log file " + path.string());
    // dup2 swaps fd 2 in one step: no line is written to a closed descriptor in between.
    if (::dup2(fd, STDERR_FILENO) < 0) {
        const int err = errno;
        ::close(fd);
        throw std::system_error(err, std::system_category(), "dup2 onto standard error");
    }
    ::close(fd);
}

void reopen_log_file(const std::filesystem::path& path) {
    try {
        redirect_stderr_to(path);
        spdlog::info("SIGUSR1: reopened {}", path.string());
    } catch (const std::exception& e) {
        spdlog::error("SIGUSR1: {}; logging on to the old file", e.what());
    }
}

}  // namespace cspd
