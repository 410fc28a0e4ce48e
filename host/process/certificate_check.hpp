// The --certs folder, checked once before anything listens (by the master, or the single
// process): HTTPS does not start with no certificate that can serve, as nginx does not. Later,
// the key process watches the folder, and a bad file leaves the last good certificate serving.
#pragma once

namespace cspd {

struct Config;

/// Throws, naming each file and why it cannot serve, unless --certs is a folder and, for
/// --tls-port without --tls-self-signed, one certificate in it can serve now.
void check_certificates(const Config& config);

}  // namespace cspd
