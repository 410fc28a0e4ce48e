// --log-file: standard error itself is pointed at the file, so spdlog's lines, the crash
// reporter's raw writes and anything a handler prints all land there. SIGUSR1 reopens
// the path (logrotate's "move, then signal"), as nginx does.
#pragma once

#include <filesystem>

namespace cspd {

/// Opens `path` for appending, never through a symbolic link, and makes it file descriptor 2.
/// Throws if it cannot be opened.
void redirect_stderr_to(const std::filesystem::path& path);

/// SIGUSR1: points standard error at a fresh `path`; on failure logs why and keeps the old file.
void reopen_log_file(const std::filesystem::path& path);

}  // namespace cspd
