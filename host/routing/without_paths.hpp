// What the public port may say of a file: its name, never where it is (refusal reasons carry
// paths into private folders).
#pragma once

#include <string>
#include <string_view>

namespace cspd {

/// `text` with every word holding a '/' (a path: absolute, relative, in brackets or quotes) cut to
/// its last part: "dlopen failed: /tmp/cspd-1-x/undef.1.so: undefined" -> "dlopen failed:
/// undef.1.so: undefined".
std::string without_paths(std::string_view text);

}  // namespace cspd
