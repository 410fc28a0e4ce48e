// The signals an operator sends (TERM, INT, QUIT, HUP, USR1). They stay blocked from the
// start of main until the process has its handlers for them (an Asio signal_set), so a
// signal that arrives during start-up is acted on late rather than killing the process
// with its default action. Workers are started with them blocked for the same reason.
#pragma once

#include <signal.h>

namespace cspd {

sigset_t lifecycle_signals();
void block_lifecycle_signals();
/// Call once the signal_sets exist and before starting threads (they inherit the mask).
void unblock_lifecycle_signals();

}  // namespace cspd
