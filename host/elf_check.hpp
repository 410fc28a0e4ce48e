// Tells a complete shared object from a half-written one before dlopen sees it:
// dlopen of a truncated file can map segments past its end and SIGBUS later.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

/// Empty if `image` is a complete ELF shared object for this machine; otherwise why not.
std::string check_elf_image(std::string_view image);

} // namespace cspd
