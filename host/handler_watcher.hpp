// Watches the handlers folder with inotify and keeps the registry in step
// with it: NAME.so appears -> loaded, replaced -> reloaded, deleted -> removed.
// Runs on the control io_context; loading blocks that thread, never a request loop.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace boost::asio { class io_context; }

namespace cspd {

class HandlerLoader;
class HandlerRegistry;

class HandlerWatcher {
public:
    /// Throws if the folder cannot be watched.
    HandlerWatcher(boost::asio::io_context& io, std::filesystem::path folder, HandlerLoader& loader,
                   HandlerRegistry& registry);
    ~HandlerWatcher();
    HandlerWatcher(const HandlerWatcher&) = delete;
    HandlerWatcher& operator=(const HandlerWatcher&) = delete;

    /// Loads what is in the folder now and starts watching.
    void start();
    /// Re-reads the whole folder (after an inotify overflow, or on request).
    void rescan();
    void stop();

    /// "hello" for "hello.so"; empty if the file name is not a handler's.
    static std::string handler_name(const std::string& file_name);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace cspd
