// What --worker-max-rss looks at: a worker's resident memory, and which handlers ran calls
// in it (named when it is replaced, since a leak is one of theirs).
#pragma once

#include "stats/shared_stats.hpp"

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace cspd {

/// Resident memory of `pid`, MiB; 0 if it cannot be read.
std::size_t resident_mib(pid_t pid);

/// "a, b (N calls), ..." for the handlers with calls counted in `count` slots from `slots`; "none".
std::string handlers_that_ran(const LoopSlot* slots, unsigned count);

}  // namespace cspd
