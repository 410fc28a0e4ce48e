// --tls-self-signed: a certificate for trying HTTPS on one's own machine, made at start when
// the certificates folder has none that serves. ECDSA P-256, for localhost, 127.0.0.1 and ::1,
// valid from a day ago for 90 days. Browsers and curl warn about it, as they should.
#pragma once

#include <string>

namespace cspd {

/// The key and the certificate, PEM, in one text (a NAME.pem). Throws std::runtime_error.
std::string make_self_signed_pem();

}  // namespace cspd
