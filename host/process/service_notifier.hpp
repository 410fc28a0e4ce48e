// Tells a service manager how the server is doing, the way systemd's Type=notify units expect
// (libsystemd's sd_notify): READY=1 once every worker serves, STOPPING=1 when a drain begins,
// WATCHDOG=1 while it serves (only if the unit sets WatchdogSec), STATUS= a line for
// `systemctl status`. Outside such a unit (no NOTIFY_SOCKET) every call does nothing.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace cspd {

class ServiceNotifier {
public:
    using Clock = std::chrono::steady_clock;

    /// Reads NOTIFY_SOCKET and WATCHDOG_USEC (meant for this process only) once.
    ServiceNotifier();

    bool enabled() const { return enabled_; }
    void ready(const std::string& status);
    void stopping(const std::string& status);
    void status(const std::string& status);

    /// Half of the unit's WatchdogSec, as systemd advises; zero when it sets none.
    std::chrono::microseconds watchdog_interval() const { return watchdog_interval_; }
    /// WATCHDOG=1, if one is due (call it at least every watchdog_interval()).
    void keep_alive(Clock::time_point now);

private:
    void send(const std::string& message);

    bool enabled_ = false;
    std::chrono::microseconds watchdog_interval_{0};
    Clock::time_point last_keep_alive_{};
    bool warned_ = false;  // one warning: a watchdog that cannot reach the manager would repeat it
};

/// This process's environment without the variables that address the service manager: a
/// child (a worker, a compiler) must not speak for the service. The pointers are environ's.
std::vector<char*> environment_for_children();

}  // namespace cspd
