// Which SDK ABI a handler library was built for, and what its csp_handler descriptor says:
// read as the ABI it claims (1, or 2.0 up to this host's minor), checked before anything of
// it is called.
#pragma once

#include "handler/loader.hpp"
#include "handler/version.hpp"

#include <csp/csp.h>

#include <string>

namespace cspd {

/// Reads the descriptor as the ABI it says it was built for; an empty `why` when it can be served.
struct DescriptorCheck {
    HandlerEntry entry;
    csp_init_fn init = nullptr;
    csp_init_context_fn init_with_context = nullptr;  // 2.2
    std::string why;
    LoadError error = LoadError::none;
};

/// `symbol`: the library's csp_handler.
DescriptorCheck check_descriptor(const void* symbol);

}  // namespace cspd
