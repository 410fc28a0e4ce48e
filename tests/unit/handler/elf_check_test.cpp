#include "handler/elf_check.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

namespace cspd {
namespace {

TEST(ElfCheck, AcceptsABuiltHandler) {
    std::string image = test::read_file(test::shipped_handler("hello.so"));
    EXPECT_TRUE(check_elf_image(image).ok()) << check_elf_image(image).reason;
}

TEST(ElfCheck, RefusesEveryTruncation) {
    std::string image = test::read_file(test::shipped_handler("hello.so"));
    // Every cut that drops bytes the loader would map or read must be caught.
    for (std::size_t keep :
         {std::size_t{0}, std::size_t{10}, std::size_t{64}, image.size() / 4, image.size() / 2, image.size() - 1}) {
        const ElfVerdict verdict = check_elf_image(std::string_view(image).substr(0, keep));
        EXPECT_TRUE(verdict.problem == ElfProblem::too_short || verdict.problem == ElfProblem::truncated)
            << "kept " << keep << ": " << verdict.reason;
    }
}

TEST(ElfCheck, RefusesNonElfAndNonSharedObjects) {
    EXPECT_EQ(check_elf_image("#!/bin/sh\necho hi\n" + std::string(100, ' ')).problem, ElfProblem::bad_magic);
    std::string image = test::read_file(test::shipped_handler("hello.so"));
    image[16] = 2;  // e_type = ET_EXEC
    EXPECT_EQ(check_elf_image(image).problem, ElfProblem::wrong_kind);
}

}  // namespace
}  // namespace cspd
