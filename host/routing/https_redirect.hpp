// --https-redirect: the plain port's answer to everything but the operator's paths.
#pragma once

#include "routing/exchange.hpp"

namespace cspd {

/// 308 to the same target on https://, port `tls_port`, of the host the client asked for
/// (400 without a Host, as HTTP/1.0 may come).
HttpStatus redirect_to_https(Exchange& exchange, unsigned short tls_port);

}  // namespace cspd
