// Counters and supervision state shared by the master and its workers: one memfd that
// every process maps MAP_SHARED. Each event loop owns one slot and is its only writer,
// so a counter update is a relaxed load and store (no locked instruction on the request
// path); readers (/metrics, /-/status, the master's watchdog) sum the slots. The master
// alone writes the worker bookkeeping, the crash counts and the quarantine list.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cspd {

inline constexpr unsigned kMaxSlots = 64;            ///< event loops over all processes
inline constexpr unsigned kMaxTrackedHandlers = 128;  ///< handler names with their own counters, per slot
inline constexpr unsigned kMaxQuarantined = 32;
inline constexpr std::size_t kStatsNameBytes = 128;  ///< longer handler names are served but not tracked

using Counter = std::atomic<std::uint64_t>;
static_assert(Counter::is_always_lock_free, "counters are shared between processes");

/// One writer per counter: no read-modify-write instruction needed.
inline void bump(Counter& counter, std::uint64_t by = 1) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
inline std::uint64_t read(const Counter& counter) noexcept { return counter.load(std::memory_order_relaxed); }

/// Upper bounds of the handler latency histogram, seconds (Prometheus "le"); +Inf is implied.
inline constexpr double kLatencyBounds[] = {0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005,
                                            0.01,    0.05,    0.1,    0.5,    1,     5};
inline constexpr unsigned kLatencyBuckets = std::size(kLatencyBounds) + 1;

/// "2xx" etc.: index 0 for 1xx … 4 for 5xx.
inline unsigned status_class(int status) noexcept {
    return status >= 100 && status <= 599 ? static_cast<unsigned>(status / 100 - 1) : 4;
}

/// What a loop knows of one handler's file. Written under a sequence lock, so that
/// readers in other processes never see half of an update.
struct VersionInfo {
    char name[kStatsNameBytes]{};
    std::uint64_t sequence = 0, size = 0, content_hash = 0;
    std::int64_t mtime_ns = 0, loaded_unix_ms = 0;
    bool live = false;                 // a version is installed (else removed, or only ever refused)
    char refusal[192]{};               // the last refusal's reason, if any
};
struct SharedVersionInfo {
    std::atomic<std::uint32_t> seq{0};  // odd while being written
    VersionInfo value;
};

/// One handler name as seen by one event loop.
struct HandlerStats {
    std::atomic<std::uint32_t> in_use{0};  // set once the name is written
    SharedVersionInfo info;
    Counter requests[5];                   // by status class
    Counter errors;                        // threw, or returned no valid status
    Counter latency[kLatencyBuckets];      // handler time, by kLatencyBounds
    Counter latency_sum_ns;
    Counter loads, refusals;               // bumped by one loop per process
};

/// One event loop: its process, its counters, what it is running right now.
struct LoopSlot {
    // Written by the master (or by the process itself in single-process mode).
    std::atomic<std::int32_t> pid{0};
    std::atomic<std::int64_t> started_unix_ms{0};
    std::atomic<std::uint32_t> restarts{0};
    // Written by the loop.
    std::atomic<std::int32_t> thread_id{0};
    std::atomic<std::int64_t> handler_started_ns{0};  // CLOCK_MONOTONIC(_COARSE); 0 when no handler runs
    std::atomic<std::uint32_t> running_handler{0};    // index + 1 into handlers[]
    std::atomic<std::uint32_t> ready{0};              // 1 once the first handler scan is done
    std::atomic<std::int64_t> ready_ns{0};            // CLOCK_MONOTONIC when ready was set
    std::atomic<std::uint32_t> crashed{0};            // set by the crash reporter on this loop's thread
    std::atomic<std::uint32_t> crashed_elsewhere{0};  // another thread of this process crashed (first slot only)
    Counter open_connections, accepted_connections;
    Counter requests[5];                               // every response, by status class
    HandlerStats handlers[kMaxTrackedHandlers];
};

/// A handler version fenced off after crashing too often.
struct QuarantineEntry {
    char name[kStatsNameBytes]{};
    std::uint64_t size = 0, content_hash = 0;
    std::int64_t since_unix_ms = 0;
};

struct CrashCount {
    char name[kStatsNameBytes]{};
    Counter crashes;
};

struct SharedStats {
    std::uint32_t magic = 0;
    std::int64_t started_unix_ms = 0;
    std::atomic<std::uint32_t> slot_count{0};
    Counter worker_restarts;
    // The quarantine list; its generation is odd while the master rewrites it.
    std::atomic<std::uint32_t> quarantine_generation{0};
    std::atomic<std::uint32_t> quarantine_count{0};
    QuarantineEntry quarantine[kMaxQuarantined];
    CrashCount crashes[kMaxTrackedHandlers];
    LoopSlot slots[kMaxSlots];
};

/// The mapped segment. Created by the master (or the single process), inherited by workers as a descriptor.
class SharedStatsMapping {
public:
    /// Creates a new zeroed segment. Throws on failure.
    static SharedStatsMapping create();
    /// Maps a segment handed down by the master. Throws on failure.
    static SharedStatsMapping attach(int fd);

    SharedStatsMapping(SharedStatsMapping&& other) noexcept;
    SharedStatsMapping& operator=(SharedStatsMapping&&) = delete;
    ~SharedStatsMapping();

    SharedStats& stats() const { return *stats_; }
    int fd() const { return fd_; }

private:
    SharedStatsMapping(int fd, SharedStats* stats) : fd_(fd), stats_(stats) {}
    int fd_ = -1;
    SharedStats* stats_ = nullptr;
};

/// Copies `text` into a fixed field, cut to fit and NUL-terminated.
void copy_text(char* field, std::size_t field_size, std::string_view text) noexcept;

/// The slot's entry for `name`, claimed if new; null if the name is too long or the table is full.
HandlerStats* handler_stats(LoopSlot& slot, std::string_view name) noexcept;

/// A consistent copy of `info` (retries while a writer is in the middle of an update; after
/// many tries -- the writer died mid-update -- returns what is there).
VersionInfo snapshot(const SharedVersionInfo& info) noexcept;

/// Writer side of the sequence lock.
template <class Update>
void update(SharedVersionInfo& info, Update&& change) noexcept {
    std::uint32_t seq = info.seq.load(std::memory_order_relaxed);
    seq += seq & 1;  // odd: a worker died mid-update in this slot; start from the next even value
    info.seq.store(seq + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    change(info.value);
    info.seq.store(seq + 2, std::memory_order_release);
}

/// True if (name, size, hash) is in the quarantine list.
bool is_quarantined(const SharedStats& stats, std::string_view name, std::uint64_t size, std::uint64_t hash) noexcept;

std::int64_t unix_now_ms() noexcept;
std::int64_t monotonic_now_ns() noexcept;
/// CLOCK_MONOTONIC_COARSE: same clock, a few milliseconds of resolution, several times cheaper.
std::int64_t coarse_monotonic_now_ns() noexcept;

} // namespace cspd
