// Runs one of a handler's callbacks on an event loop (a WebSocket's on_message, on_close...) as a
// call is run: marked for the master's watchdog (a callback that never returns has its worker
// aborted after --handler-timeout) and named in the crash report, so a crash in it is blamed on
// its handler; an exception is caught, logged and counted as the handler's error.
#pragma once

#include "common/crash_context.hpp"
#include "handler/version.hpp"
#include "stats/shared_stats.hpp"
#include "stats/watchdog_mark.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace cspd {

/// False if `call` threw. `what` names the callback in the log line ("WebSocket on_close").
template <class Call>
bool run_handler_callback(LoopSlot* slot, const HandlerVersion& version, HandlerStats* stats, const char* what,
                          Call call) {
    try {
        WatchdogMark watched(slot, stats);
        RunningHandler marker(version.label());
        call();
        return true;
    } catch (const std::exception& e) {
        spdlog::error("handler {}: its {} threw: {}", version.describe(), what, e.what());
    } catch (...) {
        spdlog::error("handler {}: its {} threw a non-std exception", version.describe(), what);
    }
    if (stats) bump(stats->errors);
    return false;
}

}  // namespace cspd
