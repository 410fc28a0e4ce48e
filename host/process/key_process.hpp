// The key process (`cspd __keys`): the only process that reads private keys. Started by the
// master (or a lone server) with a control socket as descriptor 3, over which it receives the
// channels of workers; over each channel, the connections of a worker's threads. It answers
// KeyService's requests on them, looks at the certificates folder twice a second, is not
// dumpable (no ptrace, no core, /proc/PID/mem closed to its own user), and ends when the
// control socket closes.
#pragma once

namespace cspd {

/// `args`: "__keys" [--certs DIR] [--self-signed] [--log-level L]. Its exit code.
int run_key_process(int argc, char** argv);

}  // namespace cspd
