// Tells a complete shared object from a half-written one before dlopen sees it:
// dlopen of a truncated file can map segments past its end and SIGBUS later.
#pragma once

#include <string_view>

namespace cspd {

enum class ElfProblem {
    none,
    too_short,   ///< shorter than an ELF header: maybe still being written
    bad_magic,   ///< not an ELF file at all
    wrong_kind,  ///< an ELF file, but not a 64-bit shared object for this machine
    truncated,   ///< headers or segments point past the end: maybe still being written
};

struct ElfVerdict {
    ElfProblem problem = ElfProblem::none;
    std::string_view reason;  ///< for the log; empty when fine
    bool ok() const { return problem == ElfProblem::none; }
};

/// Whether `image` is a complete ELF shared object for this machine, and if not, why.
ElfVerdict check_elf_image(std::string_view image) noexcept;

}  // namespace cspd
