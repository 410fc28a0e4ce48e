#include "process/service_notifier.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

extern char** environ;

namespace cspd {

ServiceNotifier::ServiceNotifier() {
    const char* socket = std::getenv("NOTIFY_SOCKET");
    enabled_ = socket && *socket;
    std::uint64_t usec = 0;
    // > 0: WatchdogSec is set and WATCHDOG_PID (if any) names this process.
    if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        watchdog_interval_ = std::chrono::microseconds(usec / 2);
    if (enabled_)
        spdlog::info("service manager: telling it READY, STOPPING{} through NOTIFY_SOCKET",
                     watchdog_interval_.count() ? fmt::format(" and WATCHDOG every {} ms",
                                                              watchdog_interval_.count() / 1000)
                                                : "");
}

void ServiceNotifier::ready(const std::string& status) { send("READY=1\nSTATUS=" + status); }

void ServiceNotifier::stopping(const std::string& status) { send("STOPPING=1\nSTATUS=" + status); }

void ServiceNotifier::status(const std::string& status) { send("STATUS=" + status); }

void ServiceNotifier::keep_alive(Clock::time_point now) {
    if (!enabled_ || watchdog_interval_.count() == 0 || now - last_keep_alive_ < watchdog_interval_) return;
    last_keep_alive_ = now;
    send("WATCHDOG=1");
}

void ServiceNotifier::send(const std::string& message) {
    if (!enabled_) return;
    const int sent = sd_notify(0, message.c_str());
    if (sent >= 0 || warned_) return;
    warned_ = true;
    spdlog::warn("cannot notify the service manager ({}): {}", message, std::strerror(-sent));
}

std::vector<char*> environment_for_children() {
    std::vector<char*> kept;
    for (char** entry = environ; *entry; ++entry) {
        const std::string_view variable(*entry);
        if (variable.starts_with("NOTIFY_SOCKET=") || variable.starts_with("WATCHDOG_USEC=") ||
            variable.starts_with("WATCHDOG_PID="))
            continue;
        kept.push_back(*entry);
    }
    kept.push_back(nullptr);
    return kept;
}

}  // namespace cspd
