#include "shared_stats.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <new>
#include <stdexcept>
#include <utility>
#include <system_error>

namespace cspd {
namespace {
constexpr std::uint32_t kMagic = 0x63737064;  // "cspd"
// A writer holds a sequence lock for a few stores; a reader that sees it held this many
// times running is looking at a writer that died mid-update, and must not spin forever.
constexpr int kSeqlockAttempts = 100000;

SharedStats* map_segment(int fd) {
    void* memory = ::mmap(nullptr, sizeof(SharedStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap of the shared counters");
    return static_cast<SharedStats*>(memory);
}
} // namespace

SharedStatsMapping SharedStatsMapping::create() {
    // Close-on-exec: workers get it by an explicit dup2 at spawn, nothing else inherits it.
    int fd = ::memfd_create("cspd-stats", MFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "memfd_create");
    if (::ftruncate(fd, sizeof(SharedStats)) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::system_error(err, std::system_category(), "sizing the shared counters");
    }
    SharedStats* stats = map_segment(fd);
    // The pages are zero (every atomic's initial value); construct to begin their lifetime.
    new (stats) SharedStats();
    stats->magic = kMagic;
    stats->started_unix_ms = unix_now_ms();
    return SharedStatsMapping(fd, stats);
}

SharedStatsMapping SharedStatsMapping::attach(int fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // inherited by this worker only, not by what it starts (a compiler)
    SharedStats* stats = map_segment(fd);
    if (stats->magic != kMagic) {
        ::munmap(stats, sizeof(SharedStats));
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not cspd's shared counters");
    }
    return SharedStatsMapping(fd, stats);
}

SharedStatsMapping::SharedStatsMapping(SharedStatsMapping&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), stats_(std::exchange(other.stats_, nullptr)) {}

SharedStatsMapping::~SharedStatsMapping() {
    if (stats_) ::munmap(stats_, sizeof(SharedStats));
    if (fd_ >= 0) ::close(fd_);
}

void copy_text(char* field, std::size_t field_size, std::string_view text) noexcept {
    const std::size_t n = std::min(text.size(), field_size - 1);
    std::memcpy(field, text.data(), n);
    field[n] = '\0';
}

HandlerStats* handler_stats(LoopSlot& slot, std::string_view name) noexcept {
    if (name.empty() || name.size() >= kStatsNameBytes) return nullptr;
    for (HandlerStats& entry : slot.handlers) {
        if (entry.in_use.load(std::memory_order_acquire) == 0) {
            // Only this slot's loop claims entries: no race between claimers.
            update(entry.info, [&](VersionInfo& info) { copy_text(info.name, sizeof info.name, name); });
            entry.in_use.store(1, std::memory_order_release);
            return &entry;
        }
        if (std::string_view(entry.info.value.name) == name) return &entry;
    }
    return nullptr;
}

VersionInfo snapshot(const SharedVersionInfo& info) noexcept {
    VersionInfo copy;
    for (int attempt = 0; attempt < kSeqlockAttempts; ++attempt) {
        const std::uint32_t before = info.seq.load(std::memory_order_acquire);
        std::memcpy(static_cast<void*>(&copy), &info.value, sizeof copy);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (!(before & 1) && info.seq.load(std::memory_order_relaxed) == before) break;
    }
    copy.name[sizeof copy.name - 1] = copy.refusal[sizeof copy.refusal - 1] = '\0';
    return copy;
}

bool is_quarantined(const SharedStats& stats, std::string_view name, std::uint64_t size,
                    std::uint64_t hash) noexcept {
    if (name.size() >= kStatsNameBytes) return false;
    bool found = false;
    for (int attempt = 0; attempt < kSeqlockAttempts; ++attempt) {
        const std::uint32_t before = stats.quarantine_generation.load(std::memory_order_acquire);
        found = false;
        const std::uint32_t count = std::min(stats.quarantine_count.load(std::memory_order_relaxed), kMaxQuarantined);
        for (std::uint32_t i = 0; i < count && !found; ++i) {
            const QuarantineEntry& entry = stats.quarantine[i];
            found = entry.content_hash == hash && entry.size == size &&
                    std::strncmp(entry.name, name.data(), name.size()) == 0 && entry.name[name.size()] == '\0';
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (!(before & 1) && stats.quarantine_generation.load(std::memory_order_relaxed) == before) return found;
    }
    return found;  // the master died mid-update: the next one rewrites the list
}

std::int64_t unix_now_ms() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

std::int64_t monotonic_now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t coarse_monotonic_now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace cspd
