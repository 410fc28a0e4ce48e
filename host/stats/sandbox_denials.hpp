// Calls the sandbox denied, by handler and call, for /metrics and /-/status: one table in the
// shared segment that every serving process writes from its SIGSYS handler (lock-free and
// async-signal-safe: an entry is claimed by its key, filled, then marked ready).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cspd {

/// What the serving processes' sandbox is, for /-/status: each writes it as it enters.
struct SandboxFacts {
    std::atomic<std::uint32_t> entered{0};   ///< 1 once a serving process entered it (0: --no-sandbox)
    std::atomic<std::uint32_t> log_only{0};  ///< --sandbox-log-only
    std::atomic<std::uint32_t> exec{0};      ///< handlers may start programs
    std::atomic<std::uint32_t> seccomp{0};   ///< the call filter is installed
    std::atomic<std::uint32_t> landlock{0};  ///< the file rules' Landlock ABI; 0: none
};

struct SandboxDenial {
    std::atomic<std::uint64_t> key{0};    ///< handler's hash and call number; 0: free
    std::atomic<std::uint32_t> ready{0};  ///< the names below are written
    char handler[64]{};                   ///< "" for code outside any handler's call
    char call[40]{};
    std::atomic<std::uint64_t> count{0};
};

struct SandboxDenials {
    static constexpr std::size_t kEntries = 128;
    SandboxDenial entries[kEntries];
    std::atomic<std::uint64_t> unlisted{0};  ///< denials that found the table full

    /// Counts one denial of `call` to `handler` (null: outside a handler). Async-signal-safe.
    void count(std::uint64_t key, const char* handler, const char* call) noexcept {
        key |= 1;  // never 0, the free mark
        for (std::size_t probe = 0; probe < kEntries; ++probe) {
            SandboxDenial& entry = entries[(key + probe) % kEntries];
            std::uint64_t seen = entry.key.load(std::memory_order_acquire);
            if (seen == 0 && entry.key.compare_exchange_strong(seen, key)) {
                copy(entry.handler, sizeof entry.handler, handler);
                copy(entry.call, sizeof entry.call, call);
                entry.ready.store(1, std::memory_order_release);
                seen = key;
            }
            if (seen == key) {
                entry.count.fetch_add(1, std::memory_order_relaxed);
                return;
            }
        }
        unlisted.fetch_add(1, std::memory_order_relaxed);
    }

private:
    static void copy(char* to, std::size_t room, const char* from) noexcept {
        std::size_t i = 0;
        for (; from && from[i] && i + 1 < room; ++i) to[i] = from[i];
        to[i] = '\0';
    }
};

}  // namespace cspd
