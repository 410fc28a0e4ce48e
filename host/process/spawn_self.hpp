// Starting this executable again for an internal role (a vetting process, the vetting fork
// server): `cspd VERB ARGS...`, with one descriptor handed down as 3, standard input from
// /dev/null, no signal blocked.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

namespace cspd {

/// `args` follow the program name ("__vet", ...). The child's pid, or -1 with `error` set to why.
pid_t spawn_self(const std::vector<std::string>& args, int fd_as_3, std::string& error);

}  // namespace cspd
