// A sequence lock over a trivially copyable value, for one writer and readers that
// may sit in other processes (the value lives in shared memory). Readers never block
// the writer; they copy and retry while a write is in progress.
//
// A reader retries while writes go on (each is a few stores). When one write seems to last,
// its writer may be off the CPU: the reader yields to it. Only a write that stays in
// progress for kDeadWriter is taken for a writer that died mid-update (a crashed worker);
// then the reader takes what is there rather than spin forever. A writer that finds the
// count odd (its predecessor died mid-write) starts from the next even value.
#pragma once

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cspd {

template <class T>
class Seqlock {
    static_assert(std::is_trivially_copyable_v<T>, "readers copy the value byte by byte");

public:
    static constexpr int kSpins = 1000;                          ///< before yielding to the writer
    static constexpr std::int64_t kDeadWriterNs = 1'000'000'000;  ///< one write in progress this long: its writer died

    /// Runs `change(T&)` on the value as one update, seen whole or not at all by readers.
    template <class Change>
    void write(Change&& change) noexcept {
        std::uint32_t seq = seq_.load(std::memory_order_relaxed);
        seq += seq & 1;
        seq_.store(seq + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        change(value_);
        seq_.store(seq + 2, std::memory_order_release);
    }

    /// A consistent copy of the value.
    T read() const noexcept {
        T copy;
        visit([&copy](const T& value) {
            std::memcpy(static_cast<void*>(&copy), static_cast<const void*>(&value), sizeof copy);
            return true;
        });
        return copy;
    }

    /// Calls `look(const T&)` on the value in place, again until it saw a consistent one,
    /// and returns its last result: for large values of which a reader needs a little.
    /// `look` must only read, and must cope with a torn value (it is discarded).
    template <class Look>
    auto visit(Look&& look) const noexcept {
        decltype(look(value_)) result{};
        std::uint32_t odd_seen = 0;
        int spins = 0;
        std::int64_t odd_since_ns = 0;
        for (;;) {
            const std::uint32_t before = seq_.load(std::memory_order_acquire);
            if (before & 1) {
                if (before != odd_seen) {
                    odd_seen = before;
                    spins = 0;
                    odd_since_ns = 0;
                }
                if (++spins < kSpins) continue;
                const std::int64_t now = coarse_now_ns();
                if (odd_since_ns == 0) odd_since_ns = now;
                if (now - odd_since_ns > kDeadWriterNs) return look(value_);
                ::sched_yield();
                continue;
            }
            result = look(value_);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (seq_.load(std::memory_order_relaxed) == before) return result;
        }
    }

    /// The value as the writer sees it (only the writer may call this).
    const T& writer_view() const noexcept { return value_; }

private:
    static std::int64_t coarse_now_ns() noexcept {
        timespec ts{};
        ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }

    std::atomic<std::uint32_t> seq_{0};  // odd while being written
    T value_{};
};

}  // namespace cspd
