#include "handler/elf_check.hpp"

#include <elf.h>

#include <cstring>

namespace cspd {
namespace {
#if defined(__x86_64__)
constexpr unsigned kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kMachine = EM_AARCH64;
#else
#error "add this architecture's e_machine"
#endif

bool fits(std::size_t offset, std::size_t count, std::size_t size, std::size_t total) {
    if (count != 0 && size > (total / count)) return false;
    std::size_t bytes = count * size;
    return offset <= total && bytes <= total - offset;
}
}  // namespace

ElfVerdict check_elf_image(std::string_view image) noexcept {
    using enum ElfProblem;
    if (image.size() >= SELFMAG && std::memcmp(image.data(), ELFMAG, SELFMAG) != 0)
        return {bad_magic, "not an ELF file (bad magic)"};
    if (image.size() < sizeof(Elf64_Ehdr)) return {too_short, "not an ELF file (too short)"};
    Elf64_Ehdr eh;
    std::memcpy(&eh, image.data(), sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) return {wrong_kind, "not a 64-bit ELF file"};
    if (eh.e_type != ET_DYN) return {wrong_kind, "not a shared object (ELF type is not ET_DYN)"};
    if (eh.e_machine != kMachine) return {wrong_kind, "built for another CPU architecture"};
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) return {wrong_kind, "no program headers"};
    if (!fits(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), image.size()))
        return {truncated, "truncated (program headers past end of file)"};
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        std::memcpy(&ph, image.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_NULL) continue;
        if (!fits(ph.p_offset, 1, ph.p_filesz, image.size()))
            return {truncated, "truncated (a segment extends past end of file)"};
    }
    if (eh.e_shnum != 0 && !fits(eh.e_shoff, eh.e_shnum, eh.e_shentsize, image.size()))
        return {truncated, "truncated (section headers past end of file)"};
    return {};
}

}  // namespace cspd
