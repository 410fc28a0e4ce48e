// Counters and supervision state shared by the master and its workers: one memfd that
// every process maps MAP_SHARED. Each event loop owns one slot and is its only writer,
// so a counter update is a relaxed load and store (no locked instruction on the request
// path); readers (/metrics, /-/status, the master's watchdog) sum the slots. The master
// alone writes the worker bookkeeping, the crash counts and the quarantine list.
#pragma once

#include "stats/http2_counters.hpp"
#include "stats/sandbox_denials.hpp"
#include "stats/websocket_counters.hpp"
#include "stats/tls_counters.hpp"

#include "common/crash_context.hpp"
#include "common/seqlock.hpp"
#include "common/unique_fd.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace cspd {

inline constexpr unsigned kMaxSlots = 64;  ///< event loops over all processes
inline constexpr unsigned kMaxHandlerNames = 4096;  ///< --max-handlers at most: names with their own counters, per loop
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
inline constexpr double kLatencyBounds[] = {0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
inline constexpr unsigned kLatencyBuckets = std::size(kLatencyBounds) + 1;

/// "2xx" etc.: index 0 for 1xx … 4 for 5xx.
inline unsigned status_class(unsigned status) noexcept { return status >= 100 && status <= 599 ? status / 100 - 1 : 4; }

/// What a loop knows of one handler's file. Written under a sequence lock, so that
/// readers in other processes never see half of an update.
struct VersionInfo {
    char name[kStatsNameBytes]{};
    std::uint64_t sequence = 0, size = 0, content_hash = 0;
    std::int64_t mtime_ns = 0, loaded_unix_ms = 0;
    bool live = false;    // a version is installed (else removed, or only ever refused)
    char refusal[192]{};  // the last refusal's reason, if any
    std::int64_t vetting_since_unix_ms = 0;  // a newer file is being vetted since then (0: none)
};

/// Why a worker asks its master for a successor (LoopSlot::wants_successor).
enum SuccessorReason : std::uint32_t {
    kSuccessorWiderSandbox = 1,  ///< a handler declared more than its sandbox allows
    kSuccessorVettingLost = 2,   ///< its vetting fork server is gone, and its sandbox denies starting another
};

/// HandlerStats::in_use. Entries are claimed in order; a retired one (its name was removed and
/// nothing holds its last version) is claimed again before the table is called full.
enum HandlerStatsUse : std::uint32_t { kStatsNeverUsed = 0, kStatsInUse = 1, kStatsRetired = 2 };

/// One handler name as seen by one event loop.
struct HandlerStats {
    std::atomic<std::uint32_t> in_use{0};  // a HandlerStatsUse: set once the name is written
    Seqlock<VersionInfo> info;
    Counter requests[5];               // by status class
    Counter errors;                    // threw, or returned no valid status
    Counter latency[kLatencyBuckets];  // handler time, by kLatencyBounds
    Counter latency_sum_ns;
    Counter loads, refusals;  // bumped by one loop per process
    Counter slow_calls;       // loop calls that held their event loop past --slow-call-warn
};

/// An array that lives elsewhere in the same segment, found by its distance from the field
/// itself: processes map the segment at different addresses, so no pointer may be stored.
template <class T>
struct SegmentArray {
    std::int64_t offset = 0;  // from this field to the first element
    std::uint32_t count = 0;

    std::span<T> get() noexcept {
        return {reinterpret_cast<T*>(reinterpret_cast<char*>(this) + offset), count};
    }
    std::span<const T> get() const noexcept {
        return {reinterpret_cast<const T*>(reinterpret_cast<const char*>(this) + offset), count};
    }
    void point_at(T* first, std::uint32_t n) noexcept {
        offset = reinterpret_cast<char*>(first) - reinterpret_cast<char*>(this);
        count = n;
    }
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
    std::atomic<std::uint32_t> wants_successor{0};  // first loop's: a SuccessorReason; the master replaces it
    char sandbox_declared[160]{};  // by its process before ready: what its handlers declared of the sandbox
    std::atomic<std::int64_t> ready_ns{0};            // CLOCK_MONOTONIC when ready was set
    std::atomic<std::uint32_t> crashed{0};            // set by the crash reporter on this loop's thread
    std::atomic<std::uint32_t> crashed_elsewhere{0};  // another thread of this process crashed (first slot only)
    // --cluster, first slot only: bytes of this worker's publishes on their way to Redis, added by
    // the worker as it sends one to the master, taken off by the master once Redis has answered
    // for it; their sum over slots is what --cluster-queue bounds.
    std::atomic<std::int64_t> cluster_reserved{0};
    DeathBlame blame;  // first slot only: the handler the dying process blamed, and the phase (reset by the master)
    // First slot only: the version this process is loading or initializing now (phase load or init),
    // and since when (CLOCK_MONOTONIC; 0 when none), for the master's --init-timeout. The loader's thread writes it.
    DeathBlame loading;
    std::atomic<std::int64_t> loading_since_ns{0};
    Counter open_connections, accepted_connections;
    Counter replies_owed;                    // deferred and blocking calls not answered yet
    // The process's pool for blocking handlers, in its first slot (written under the pool's lock).
    Counter blocking_busy, blocking_queued;  // now
    Counter blocking_refused;                // calls answered 503: every thread busy, the queue full
    Counter requests[5];  // every response, by status class
    Counter cache_hits, cache_misses;  // the reply cache: lookups for handlers that cache
    Counter cache_bytes;               // now
    Counter access_log_dropped;        // lines the access log's writer was too far behind to take
    Counter tls_handshakes[std::size_t(TlsVersion::count)];  // completed, by version
    Counter tls_resumed;                                     // of those, resumed from a ticket
    Counter tls_failures[std::size_t(TlsFailure::count)];
    Counter protocol_requests[2];  // requests routed, by protocol: HTTP/1.x, HTTP/2
    Counter h2_connections;        // HTTP/2 connections begun
    Counter h2_streams;            // streams clients opened on them
    Counter h2_resets_received;    // RST_STREAM from clients
    Counter h2_resets_sent[kH2ErrorCodes];  // RST_STREAM we sent, by error code
    Counter h2_goaways[std::size_t(H2Goaway::count)];  // GOAWAY we sent, by reason
    Counter ws_opened, ws_closed;            // WebSocket conversations begun and ended (open: the difference)
    Counter ws_messages_in, ws_messages_out;  // whole messages, both ways (out: publishes included)
    Counter ws_bytes_in, ws_bytes_out;       // on the wire, frames and all
    Counter ws_closes[kWsCloseKinds];        // conversations ended, by how (kWsCloseNames)
    Counter ws_delivered;                    // published messages taken to a subscriber (the fan-out)
    Counter ws_gaps_told;                    // subscribers told by on_topic_gap that a topic lost messages
    Counter compressed_responses[3];         // answers sent compressed, by coding: gzip, br, zstd
    Counter compression_bytes_in, compression_bytes_out;  // what the coders took and gave (not cached bodies)
    SegmentArray<HandlerStats> handler_entries;  // --max-handlers of them, after the SharedStats

    std::span<HandlerStats> handlers() noexcept { return handler_entries.get(); }
    std::span<const HandlerStats> handlers() const noexcept { return handler_entries.get(); }
};

/// A handler version fenced off after crashing too often.
struct QuarantineEntry {
    char name[kStatsNameBytes]{};
    std::uint64_t size = 0, content_hash = 0;
    std::int64_t since_unix_ms = 0;
    std::uint32_t phase = 0;  // a HandlerPhase: load or init means it is never loaded again; call: it answers 503
    std::uint64_t rolled_back_to_size = 0, rolled_back_to_hash = 0;  // the version served instead (0: none, 503)
    std::uint32_t crashes = 0;                                        // what quarantined it, within the window
};

struct CrashCount {
    char name[kStatsNameBytes]{};
    Counter crashes;
    Counter rollbacks;  // quarantined versions that gave way to the version they replaced
};

struct QuarantineList {
    std::uint32_t count = 0;
    QuarantineEntry entries[kMaxQuarantined];
};

/// Topics across hosts (--cluster): the master's link to Redis, for /-/status and /metrics, and
/// the queue that csp_publish checks before it sends across (CSP_AGAIN past --cluster-queue).
struct ClusterStats {
    enum State : std::uint32_t { off = 0, down = 1, connected = 2 };
    std::atomic<std::uint32_t> state{off};
    Counter published, received, recovered, gaps, reconnects, failed;
    std::atomic<std::uint64_t> refused{0};      ///< publishes kept on their host (any worker adds)
    std::atomic<std::uint64_t> queue_bytes{0};  ///< publishes waiting for Redis's answer
    std::atomic<std::uint64_t> lag_ms{0};       ///< how long the oldest of them has waited
    std::atomic<std::uint64_t> topics{0};       ///< subscribed across hosts
};

struct SharedStats {
    std::uint32_t magic = 0;
    std::int64_t started_unix_ms = 0;
    std::atomic<std::uint32_t> slot_count{0};
    Counter worker_restarts;
    Seqlock<QuarantineList> quarantine;         // written by the master (stats/quarantine_list)
    std::atomic<std::uint32_t> quarantined{0};  // its count, so that the request path checks one word
    // Set by the master once every worker has served: a worker that starts later is a replacement,
    // and serves at once what the others serve rather than wait for a version being vetted.
    std::atomic<std::uint32_t> serving{0};
    ClusterStats cluster;  // written by the master
    SandboxFacts sandbox;            // by every serving process as it enters its sandbox
    SandboxDenials sandbox_denials;  // by every serving process's SIGSYS handler
    SegmentArray<CrashCount> crash_counts;  // --max-handlers of them, after the loops' entries
    LoopSlot slots[kMaxSlots];
    std::uint64_t segment_bytes = 0;  // the whole segment: this and the arrays after it

    std::span<CrashCount> crashes() noexcept { return crash_counts.get(); }
    std::span<const CrashCount> crashes() const noexcept { return crash_counts.get(); }
};

/// The mapped segment. Created by the master (or the single process), inherited by workers as a descriptor.
class SharedStatsMapping {
public:
    /// Creates a new zeroed segment with counters for `handler_names` names per loop. Throws on failure.
    static SharedStatsMapping create(unsigned handler_names);
    /// Maps a segment handed down by the master. Throws on failure.
    static SharedStatsMapping attach(int fd);

    SharedStatsMapping(SharedStatsMapping&& other) noexcept;
    SharedStatsMapping& operator=(SharedStatsMapping&&) = delete;
    ~SharedStatsMapping();

    SharedStats& stats() const { return *stats_; }
    int fd() const { return fd_.get(); }

private:
    SharedStatsMapping(UniqueFd fd, SharedStats* stats, std::size_t bytes)
        : fd_(std::move(fd)), stats_(stats), bytes_(bytes) {}
    UniqueFd fd_;
    SharedStats* stats_ = nullptr;
    std::size_t bytes_ = 0;
};

/// Copies `text` into a fixed field, cut to fit and NUL-terminated.
void copy_text(char* field, std::size_t field_size, std::string_view text) noexcept;

/// The slot's entry for `name`, claimed if new (a never used entry, else a retired one, its
/// counters zeroed); null if the name is too long or every entry holds a name.
HandlerStats* handler_stats(LoopSlot& slot, std::string_view name) noexcept;
/// Frees `name`'s entry for another name (the slot's own loop only); false if it has none.
bool retire_handler_stats(LoopSlot& slot, std::string_view name) noexcept;

/// A consistent copy of a handler's version info, its texts NUL-terminated whatever a dying writer left.
inline VersionInfo snapshot(const Seqlock<VersionInfo>& info) noexcept {
    VersionInfo copy = info.read();
    copy.name[sizeof copy.name - 1] = copy.refusal[sizeof copy.refusal - 1] = '\0';
    return copy;
}

}  // namespace cspd
