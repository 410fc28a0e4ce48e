// A plain TCP connection to this machine, for tests that speak bytes themselves.
#pragma once

namespace cspd::test {

/// A blocking socket connected to 127.0.0.1:`port` (close-on-exec), or -1 with errno set.
/// `receive_buffer` > 0 sets SO_RCVBUF before the connect (so that the window it offers is small).
/// `source`: the loopback address it comes from ("127.0.0.2": another client), or null.
int connect_loopback(unsigned short port, int receive_buffer = 0, const char* source = nullptr);

}  // namespace cspd::test
