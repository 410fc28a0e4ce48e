#include "stats/shared_stats.hpp"

#include "common/clocks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace cspd {
namespace {
constexpr std::uint32_t kMagic = 0x63737064;  // "cspd"

void* map_segment(int fd, std::size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap of the shared counters");
    return memory;
}
}  // namespace

SharedStatsMapping SharedStatsMapping::create(unsigned handler_names) {
    handler_names = std::clamp(handler_names, 1u, kMaxHandlerNames);
    const std::size_t entries_at = sizeof(SharedStats);
    const std::size_t crashes_at = entries_at + std::size_t{kMaxSlots} * handler_names * sizeof(HandlerStats);
    const std::size_t bytes = crashes_at + std::size_t{handler_names} * sizeof(CrashCount);
    // Close-on-exec: workers get it by an explicit dup2 at spawn, nothing else inherits it.
    UniqueFd fd(::memfd_create("cspd-stats", MFD_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::system_category(), "memfd_create");
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
        throw std::system_error(errno, std::system_category(), "sizing the shared counters");
    char* base = static_cast<char*>(map_segment(fd.get(), bytes));
    // The pages are zero, every atomic's initial value. The header is constructed to begin its
    // lifetime; the arrays after it are left untouched (all zero is a never used entry), so that
    // memory is spent only on the names a loop counts, however large --max-handlers is.
    auto* stats = new (base) SharedStats();
    auto* entries = reinterpret_cast<HandlerStats*>(base + entries_at);
    auto* crashes = reinterpret_cast<CrashCount*>(base + crashes_at);
    for (unsigned s = 0; s < kMaxSlots; ++s) stats->slots[s].handler_entries.point_at(&entries[s * handler_names], handler_names);
    stats->crash_counts.point_at(crashes, handler_names);
    stats->segment_bytes = bytes;
    stats->magic = kMagic;
    stats->started_unix_ms = unix_now_ms();
    return SharedStatsMapping(std::move(fd), stats, bytes);
}

SharedStatsMapping SharedStatsMapping::attach(int fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // inherited by this worker only, not by what it starts (a compiler)
    struct stat file {};
    if (::fstat(fd, &file) != 0 || static_cast<std::size_t>(file.st_size) < sizeof(SharedStats))
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not cspd's shared counters");
    const auto bytes = static_cast<std::size_t>(file.st_size);
    auto* stats = static_cast<SharedStats*>(map_segment(fd, bytes));
    if (stats->magic != kMagic || stats->segment_bytes != bytes) {
        ::munmap(stats, bytes);
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not cspd's shared counters");
    }
    return SharedStatsMapping(UniqueFd(fd), stats, bytes);
}

SharedStatsMapping::SharedStatsMapping(SharedStatsMapping&& other) noexcept
    : fd_(std::move(other.fd_)), stats_(std::exchange(other.stats_, nullptr)), bytes_(other.bytes_) {}

SharedStatsMapping::~SharedStatsMapping() {
    if (stats_) ::munmap(stats_, bytes_);
}

void copy_text(char* field, std::size_t field_size, std::string_view text) noexcept {
    const std::size_t n = std::min(text.size(), field_size - 1);
    std::memcpy(field, text.data(), n);
    field[n] = '\0';
}

namespace {
void zero(Counter& counter) { counter.store(0, std::memory_order_relaxed); }

/// Gives `entry` to `name` with nothing counted. Readers skip it until in_use says so.
void claim(HandlerStats& entry, std::string_view name) {
    for (Counter& c : entry.requests) zero(c);
    for (Counter& c : entry.latency) zero(c);
    for (Counter* c : {&entry.errors, &entry.latency_sum_ns, &entry.loads, &entry.refusals, &entry.slow_calls}) zero(*c);
    entry.info.write([&](VersionInfo& info) {
        info = VersionInfo{};
        copy_text(info.name, sizeof info.name, name);
    });
    entry.in_use.store(kStatsInUse, std::memory_order_release);
}
}  // namespace

HandlerStats* handler_stats(LoopSlot& slot, std::string_view name) noexcept {
    if (name.empty() || name.size() >= kStatsNameBytes) return nullptr;
    // Only this slot's loop claims entries: no race between claimers.
    HandlerStats* retired = nullptr;
    for (HandlerStats& entry : slot.handlers()) {
        const std::uint32_t use = entry.in_use.load(std::memory_order_acquire);
        if (use == kStatsNeverUsed) {  // the rest are unused too: the name is new
            if (!retired) retired = &entry;
            break;
        }
        if (use == kStatsRetired) {
            if (!retired) retired = &entry;
            continue;
        }
        if (std::string_view(entry.info.writer_view().name) == name) return &entry;
    }
    if (retired) claim(*retired, name);
    return retired;
}

bool retire_handler_stats(LoopSlot& slot, std::string_view name) noexcept {
    for (HandlerStats& entry : slot.handlers()) {
        const std::uint32_t use = entry.in_use.load(std::memory_order_acquire);
        if (use == kStatsNeverUsed) break;
        if (use == kStatsInUse && std::string_view(entry.info.writer_view().name) == name) {
            entry.in_use.store(kStatsRetired, std::memory_order_release);
            return true;
        }
    }
    return false;
}

}  // namespace cspd
