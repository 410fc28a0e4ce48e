// Throws from the handler: the host must answer 500 and go on.
#include <csp/csp.h>

#include <stdexcept>

static int throwing(const csp_request*, csp_reply*) { throw std::runtime_error("boom from a test handler"); }

CSP_HANDLER(throwing)
