#include "command.hpp"

#include <cstdio>

namespace cspd::test {

std::string run_command(const std::string& command) {
    std::string out;
    if (FILE* pipe = ::popen((command + " 2>&1").c_str(), "r")) {
        char chunk[4096];
        for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) out.append(chunk, n);
        ::pclose(pipe);
    }
    return out;
}

}  // namespace cspd::test
