#include "common/handler_code.hpp"

#include <atomic>
#include <mutex>

namespace cspd {
namespace {

constexpr int kSlots = 256;

struct CodeRange {
    std::atomic<bool> valid{false};  // set last when written, cleared first when forgotten
    std::uintptr_t start = 0, end = 0, base = 0;
    char name[128] = {};
    HandlerLabel label;
};

CodeRange ranges[kSlots];
std::mutex writers;  // loads and unloads take turns; the reader never waits

}  // namespace

int remember_handler_code(std::uintptr_t start, std::uintptr_t end, std::uintptr_t base,
                          const HandlerLabel& handler) noexcept {
    std::lock_guard lock(writers);
    for (int i = 0; i < kSlots; ++i) {
        CodeRange& range = ranges[i];
        if (range.valid.load(std::memory_order_relaxed)) continue;
        range.start = start;
        range.end = end;
        range.base = base;
        std::size_t n = 0;
        for (; handler.name[n] && n + 1 < sizeof range.name; ++n) range.name[n] = handler.name[n];
        range.name[n] = '\0';
        range.label = handler;
        range.label.name = range.name;
        range.valid.store(true, std::memory_order_release);
        return i;
    }
    return -1;
}

void forget_handler_code(int slot) noexcept {
    if (slot < 0 || slot >= kSlots) return;
    std::lock_guard lock(writers);
    ranges[slot].valid.store(false, std::memory_order_release);
}

const HandlerLabel* handler_code_at(std::uintptr_t address, std::uintptr_t* offset) noexcept {
    for (const CodeRange& range : ranges)
        if (range.valid.load(std::memory_order_acquire) && address >= range.start && address < range.end) {
            if (offset) *offset = address - range.base;
            return &range.label;
        }
    return nullptr;
}

}  // namespace cspd
