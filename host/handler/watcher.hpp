// Watches the handlers folder with inotify and keeps the registry in step
// with it: NAME.so appears -> loaded, replaced -> reloaded, deleted -> removed.
// Runs on the control io_context, never a request loop. A new version waits at the load gate
// (vetting: up to --init-timeout per phase) without holding that thread; the load itself
// (dlopen, init) then runs on it.
#pragma once

#include "handler/installer.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace cspd {

class HandlerCompiler;
class HandlerLoader;
class LoadGate;
class HandlerRegistry;

struct WatcherOptions {
    /// With a compiler (--compile), NAME.cpp and NAME.c are handlers too: compiled off this
    /// thread, one at a time per name. NAME.so wins over NAME.cpp, which wins over NAME.c.
    const HandlerCompiler* compiler = nullptr;
    /// --dev: a source that does not compile answers 500 with the compiler's diagnostics.
    bool dev_diagnostics = false;
    /// Asked about each new version before it is loaded (vetting); null: none.
    LoadGate* gate = nullptr;
    /// Asked about each new file before it is read: why this process cannot take it (its sandbox
    /// does not reach what the handler declared), or empty. The file is refused with that reason.
    std::function<std::string(const std::string& name, const std::filesystem::path& file)> refuses;
    /// What becomes of replaced, quarantined and refused versions (kept copies, rollback).
    InstallerOptions install;
};

class HandlerWatcher {
public:
    /// Throws if the folder cannot be watched.
    HandlerWatcher(boost::asio::io_context& io, std::filesystem::path folder, HandlerLoader& loader,
                   HandlerRegistry& registry, WatcherOptions options = {});
    ~HandlerWatcher();
    HandlerWatcher(const HandlerWatcher&) = delete;
    HandlerWatcher& operator=(const HandlerWatcher&) = delete;

    /// Loads what is in the folder now and starts watching. `settled` runs once every version found
    /// now is loaded or refused (perhaps before this returns): until then requests would miss them.
    /// Without `wait_for_vetting` (a worker replacing one that served), it runs as soon as the
    /// folder is read: a version still being vetted then has the version the server kept serving
    /// in its place meanwhile, if there is one.
    void start(std::function<void()> settled = {}, bool wait_for_vetting = true);
    /// Re-reads the whole folder (after an inotify overflow, or on request).
    void rescan();
    void stop();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cspd
