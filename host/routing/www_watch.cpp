#include "routing/www_watch.hpp"

#include <spdlog/spdlog.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cspd {
namespace {
constexpr std::uint32_t kMask = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
}

WwwWatch::WwwWatch(const std::filesystem::path& root)
    : inotify_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)), stop_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!inotify_ || !stop_) {
        spdlog::warn("cannot watch {} ({}): static files are read from disk on every request", root.string(),
                     std::strerror(errno));
        return;
    }
    if (!add_tree(root)) return;
    working_.store(true, std::memory_order_release);
    thread_ = std::thread([this] { run(); });
}

WwwWatch::~WwwWatch() {
    if (!thread_.joinable()) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
}

bool WwwWatch::add_tree(const std::filesystem::path& folder) {
    const auto watch = [this](const std::filesystem::path& path) {
        const int wd = ::inotify_add_watch(inotify_.get(), path.c_str(), kMask);
        if (wd < 0) {
            spdlog::warn("cannot watch {} ({}; see fs.inotify.max_user_watches): static files are read from disk "
                         "on every request from now on",
                         path.string(), std::strerror(errno));
            return false;
        }
        folders_[wd] = path;
        return true;
    };
    if (!watch(folder)) return false;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(folder, ec); !ec && it != decltype(it)();
         it.increment(ec))
        if (it->is_directory(ec) && !it->is_symlink(ec) && !watch(it->path())) return false;
    return true;
}

void WwwWatch::run() {
    alignas(inotify_event) char buffer[16 * 1024];
    for (;;) {
        pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents) return;
        for (;;) {
            const ssize_t n = ::read(inotify_.get(), buffer, sizeof buffer);
            if (n <= 0) break;
            for (char* p = buffer; p < buffer + n;) {
                const auto* event = reinterpret_cast<const inotify_event*>(p);
                p += sizeof(inotify_event) + event->len;
                if (event->mask & IN_IGNORED) folders_.erase(event->wd);
                // A new folder (made, or moved in) is watched too, with whatever it already holds.
                if ((event->mask & IN_ISDIR) && (event->mask & (IN_CREATE | IN_MOVED_TO)) && event->len) {
                    const auto parent = folders_.find(event->wd);
                    if (parent == folders_.end() || !add_tree(parent->second / event->name))
                        working_.store(false, std::memory_order_release);
                }
            }
            // After the new watches: any change at all makes every cached file stale (www changes rarely).
            generation_.fetch_add(1, std::memory_order_acq_rel);
        }
    }
    working_.store(false, std::memory_order_release);
}

}  // namespace cspd
