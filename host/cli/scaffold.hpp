// `cspd new NAME`: writes a ready-to-build handler skeleton, like `kodev create`.
#pragma once

#include <filesystem>
#include <string>

namespace cspd {

/// Writes NAME.c or NAME.cpp (lang "c" or "cpp") into `folder`; never overwrites.
/// Returns the path written; throws with a message that says why not.
std::filesystem::path write_handler_skeleton(const std::string& name, const std::string& lang,
                                             const std::filesystem::path& folder);

}  // namespace cspd
