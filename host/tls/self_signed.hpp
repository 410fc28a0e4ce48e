// --tls-self-signed: a certificate for trying HTTPS on one's own machine, made at start when
// the certificates folder has none that serves. ECDSA P-256, for localhost, 127.0.0.1 and ::1,
// valid from a day ago for 90 days. Browsers and curl warn about it, as they should.
#pragma once

#include <string>
#include <vector>

namespace cspd {

/// What a self-signed certificate says; the defaults are --tls-self-signed's.
struct SelfSignedSpec {
    std::string common_name = "localhost";
    std::vector<std::string> alt_names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1"};  ///< subjectAltName entries
    long valid_from_s = -24L * 3600;        ///< from now
    long valid_until_s = 90L * 24 * 3600;  ///< from now
    bool rsa = false;                       ///< RSA 2048 instead of ECDSA P-256
};

/// The key and the certificate, PEM, in one text (a NAME.pem). Throws std::runtime_error.
std::string make_self_signed_pem(const SelfSignedSpec& spec = {});

}  // namespace cspd
