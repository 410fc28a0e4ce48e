// Watches the www folder (every folder under it) with inotify and counts changes, so caches of its
// files can tell they are stale with one atomic load. A thread of its own reads the events.
#pragma once

#include "common/unique_fd.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <thread>

namespace cspd {

class WwwWatch {
public:
    /// Starts watching `root`; if inotify cannot (no instance, too many watches), `working()` is
    /// false and the reason is logged: callers then keep nothing.
    explicit WwwWatch(const std::filesystem::path& root);
    ~WwwWatch();
    WwwWatch(const WwwWatch&) = delete;
    WwwWatch& operator=(const WwwWatch&) = delete;

    bool working() const { return working_.load(std::memory_order_acquire); }
    /// Bumped after every change under the folder (and when events were lost).
    std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

private:
    bool add_tree(const std::filesystem::path& folder);
    void run();

    UniqueFd inotify_, stop_;
    std::atomic<std::uint64_t> generation_{1};
    std::atomic<bool> working_{false};  // false for good once a folder could not be watched
    std::map<int, std::filesystem::path> folders_;  // by watch descriptor; the thread's after start
    std::thread thread_;
};

}  // namespace cspd
