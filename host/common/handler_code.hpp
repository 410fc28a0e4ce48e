// Where each loaded handler's code lies in memory, so that a fault outside any marked phase
// (on a thread the handler started itself) can still be blamed on the handler whose private
// copy holds the faulting instruction or a frame of its backtrace. Written by whoever loads
// and unloads; read, without a lock, by the crash reporter.
#pragma once

#include "common/crash_context.hpp"

#include <cstdint>

namespace cspd {

/// Records [start, end) as `handler`'s code, loaded at `base` (the address its ELF's virtual
/// address 0 lies at; the label is copied); the slot to forget, or -1 when the table is full.
int remember_handler_code(std::uintptr_t start, std::uintptr_t end, std::uintptr_t base,
                          const HandlerLabel& handler) noexcept;
void forget_handler_code(int slot) noexcept;

/// The handler whose code holds `address`, or null. Async-signal-safe; the label stays valid
/// until the process dies (slots are reused, never freed).
/// With `offset`: also where `address` is in the handler's file, as addr2line -e NAME.so takes it.
const HandlerLabel* handler_code_at(std::uintptr_t address, std::uintptr_t* offset = nullptr) noexcept;

}  // namespace cspd
