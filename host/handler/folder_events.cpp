#include "handler/folder_events.hpp"

#include <spdlog/spdlog.h>

#include <system_error>

namespace cspd {
namespace asio = boost::asio;

FolderEvents::FolderEvents(asio::io_context& io, std::filesystem::path folder, Callbacks callbacks)
    : inotify_(io), folder_(std::move(folder)), callbacks_(std::move(callbacks)) {}

void FolderEvents::start() {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "inotify_init1");
    inotify_.assign(fd);
    const std::uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB |
                               IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
    if (::inotify_add_watch(fd, folder_.c_str(), mask) < 0)
        throw std::system_error(errno, std::system_category(), "cannot watch " + folder_.string());
    read();
}

void FolderEvents::stop() {
    stopped_ = true;
    boost::system::error_code ignored;
    inotify_.close(ignored);
}

void FolderEvents::read() {
    inotify_.async_read_some(asio::buffer(buffer_), [this](boost::system::error_code ec, std::size_t n) {
        if (ec == asio::error::operation_aborted || stopped_) return;
        if (ec) {
            spdlog::error("inotify read failed: {}; handler changes are no longer seen", ec.message());
            return;
        }
        for (std::size_t at = 0; at + sizeof(inotify_event) <= n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer_ + at);
            at += sizeof(inotify_event) + event->len;
            if (event->mask & IN_Q_OVERFLOW) {
                spdlog::warn("inotify queue overflowed; re-reading the handlers folder");
                callbacks_.overflowed();
            } else if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
                spdlog::error("handlers folder {} was removed or moved; loaded handlers keep serving, "
                              "but changes are no longer seen",
                              folder_.string());
            } else if (event->len > 0) {
                callbacks_.changed(event->name, event->mask);
            }
        }
        read();
    });
}

} // namespace cspd
