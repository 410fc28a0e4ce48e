#include "process/worker_memory.hpp"

#include <unistd.h>

#include <fstream>
#include <map>

namespace cspd {

std::size_t resident_mib(pid_t pid) {
    std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
    std::size_t pages = 0, resident = 0;
    if (!(statm >> pages >> resident)) return 0;
    return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) >> 20;
}

std::string handlers_that_ran(const LoopSlot* slots, unsigned count) {
    std::map<std::string, std::uint64_t> calls;
    for (unsigned s = 0; s < count; ++s)
        for (const HandlerStats& h : slots[s].handlers()) {
            const std::uint32_t use = h.in_use.load(std::memory_order_acquire);
            if (use == kStatsNeverUsed) break;  // claimed in order
            if (use != kStatsInUse) continue;
            std::uint64_t n = 0;
            for (const Counter& c : h.requests) n += read(c);
            if (n) calls[snapshot(h.info).name] += n;
        }
    std::string text;
    for (const auto& [name, n] : calls) text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(n) + " calls)";
    return text.empty() ? "none" : text;
}

}  // namespace cspd
