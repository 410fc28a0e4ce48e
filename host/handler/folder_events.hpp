// inotify on the handlers folder, read on an io_context: which file names changed, and
// when the kernel dropped events (overflow) or the folder itself went away.
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/inotify.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace cspd {

class FolderEvents {
public:
    struct Callbacks {
        /// A file in the folder was written, moved in or out, deleted, created or changed mode.
        std::function<void(const std::string& file_name, std::uint32_t mask)> changed;
        /// The kernel's queue overflowed: events were lost, read the folder again.
        std::function<void()> overflowed;
    };

    FolderEvents(boost::asio::io_context& io, std::filesystem::path folder, Callbacks callbacks);

    /// Starts watching. Throws if the folder cannot be watched.
    void start();
    void stop();

private:
    void read();

    boost::asio::posix::stream_descriptor inotify_;
    std::filesystem::path folder_;
    Callbacks callbacks_;
    bool stopped_ = false;
    alignas(inotify_event) char buffer_[64 * 1024];
};

} // namespace cspd
