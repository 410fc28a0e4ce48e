// Running an outside client (curl, openssl, python3, node, testssl.sh) from a test.
#pragma once

#include <string>

namespace cspd::test {

/// Runs `command` with /bin/sh; its standard output and standard error, together.
std::string run_command(const std::string& command);

}  // namespace cspd::test
