// Each handler's own folder beneath --data-dir (SDK csp_data_dir, 2.6): "DATA-DIR/NAME", made
// (mode 0700) the first time it is asked for, in the worker or the vetting process, and kept
// across versions and restarts. The sandbox lets handlers read and write beneath --data-dir.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

/// The folder of handler `name`, made if need be; null without --data-dir or if it cannot be
/// made (logged once). The string lives as long as the process: its pointer may be kept.
const std::string* handler_data_folder(std::string_view name);

}  // namespace cspd
