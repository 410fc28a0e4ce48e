// Puts what the watcher loads into the registry, and decides what serves when a version goes
// bad: a replaced version stays loaded as the fallback of the one that replaced it until that
// one has served --quarantine-window without being quarantined; a quarantined version gives
// way to its fallback at once (a rollback); a refused file leaves the live version serving, or,
// in a worker that has none (it just started), the version the server kept; so does a version
// still being vetted when a replacement worker starts. Control thread only.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace cspd {

struct HandlerFileIdentity;
class HandlerLoader;
class HandlerRegistry;
class HandlerVersion;
class KeptVersions;
class PreparedVersion;

struct InstallerOptions {
    /// Versions the server keeps across worker restarts (null: none).
    const KeptVersions* kept = nullptr;
    /// Whether the version of `name` in `file` is quarantined; unset: no rollback (--no-rollback,
    /// or no master).
    std::function<bool(const std::string& name, const HandlerFileIdentity& file)> quarantined;
    /// How long a new version must serve unquarantined before the one it replaced is let go.
    std::chrono::seconds probation{60};
};

class HandlerInstaller {
public:
    HandlerInstaller(boost::asio::io_context& io, HandlerLoader& loader, HandlerRegistry& registry,
                     InstallerOptions options);
    ~HandlerInstaller();
    HandlerInstaller(const HandlerInstaller&) = delete;
    HandlerInstaller& operator=(const HandlerInstaller&) = delete;

    /// Starts looking for quarantined versions to roll back.
    void start();
    void stop();

    /// Makes `version`, loaded from `prepared` (its copy still on disk), the live one of its name.
    void install(std::shared_ptr<HandlerVersion> version, const PreparedVersion* prepared);
    /// `name`'s file is gone: it answers 404, and nothing of it is kept for workers that start later.
    void removed(const std::string& name);
    /// A file for `name` was refused for `reason`.
    void refused(const std::string& name, const std::filesystem::path& file, const std::string& reason);
    /// A version of `name` is being vetted as this worker starts to serve: the version the server
    /// kept serving, if any and none is live here, serves until the verdict.
    void vetting_meanwhile(const std::string& name);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cspd
