// A sequence lock over a trivially copyable value, for one writer and readers that
// may sit in other processes (the value lives in shared memory). Readers never block
// the writer; they copy and retry while a write is in progress.
//
// A reader retries while writes go on (each is a few stores). One that sees the same write
// in progress kReadAttempts times running is looking at a writer that died mid-update, and
// takes what is there rather than spin forever. A writer that finds the count odd (its
// predecessor died mid-write) starts from the next even value.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cspd {

template <class T>
class Seqlock {
    static_assert(std::is_trivially_copyable_v<T>, "readers copy the value byte by byte");

public:
    static constexpr int kReadAttempts = 100000;

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
        int odd_times = 0;
        for (;;) {
            const std::uint32_t before = seq_.load(std::memory_order_acquire);
            if (before & 1) {
                // A write in progress. Writers hold the lock for a few stores: the same odd count
                // this many times running means its writer died, and readers take what is there.
                odd_times = before == odd_seen ? odd_times + 1 : 0;
                odd_seen = before;
                if (odd_times < kReadAttempts) continue;
                return look(value_);
            }
            result = look(value_);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (seq_.load(std::memory_order_relaxed) == before) return result;
        }
    }

    /// The value as the writer sees it (only the writer may call this).
    const T& writer_view() const noexcept { return value_; }

private:
    std::atomic<std::uint32_t> seq_{0};  // odd while being written
    T value_{};
};

}  // namespace cspd
