// What brings handler versions to a serving process's loops: the watcher of the handlers
// folder, the loader, vetting, the compiler (--compile), kept versions, and the registry
// whose changes every loop hears on its own thread. It all runs on the control thread.
#pragma once

#include "process/config.hpp"
#include "process/worker_role.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace cspd {

class EventLoop;
struct SharedStats;

class HandlerSupply {
public:
    /// Why this process cannot take a handler file before it is read (its sandbox), or empty.
    using Refuses = std::function<std::string(const std::string& name, const std::filesystem::path& file)>;

    /// `stats` and `loops` outlive this; the private copies of handler files go into
    /// `private_folder` (this process's, which outlives this). Throws if the folder cannot be watched.
    HandlerSupply(boost::asio::io_context& control, const Config& config, const std::optional<WorkerRole>& role,
                  SharedStats& stats, unsigned first_slot, const std::vector<std::unique_ptr<EventLoop>>& loops,
                  const std::filesystem::path& private_folder, Refuses refuses = {});
    ~HandlerSupply();
    HandlerSupply(const HandlerSupply&) = delete;
    HandlerSupply& operator=(const HandlerSupply&) = delete;

    /// Loads what the folder holds and watches it; `settled` runs once each version found now is
    /// loaded or refused (without `wait_for_vetting`: once those with a verdict are, see HandlerWatcher).
    void start(std::function<void()> settled, bool wait_for_vetting = true);
    /// Reads the whole folder again (SIGHUP).
    void rescan();
    /// Watches no more (waits for a compiler that runs).
    void stop();
    /// Lets go of every version (the loops' own references go with them).
    void clear();
    /// Starts the vetting fork server now, with the sandbox's `call_filter` (process/sandbox).
    bool start_vetting(const std::string& call_filter, std::string& error);
    /// When vetting cannot run (its fork server is lost): `lost` says why a version is refused
    /// instead, and may ask for a successor. Without it, versions load untried.
    void when_vetting_is_lost(std::function<std::string()> lost);

private:
    struct Parts;
    std::unique_ptr<Parts> parts_;
};

}  // namespace cspd
