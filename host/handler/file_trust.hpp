// Whether a handler file may be trusted, like sshd's StrictModes: code that runs inside the
// server must not be writable by anyone the server does not trust.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace cspd {

/// Why the file at `path` (its stat `file`) must not be trusted, or empty: owned by someone
/// other than root or this user, writable by group or others, or in a folder (its own, or the
/// one it really lives in when reached through a link) that others may change.
std::string trust_problem(const struct stat& file, const std::filesystem::path& path);

}  // namespace cspd
