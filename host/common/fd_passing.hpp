// Descriptors handed to another process over a Unix socket (SCM_RIGHTS), one a message.
#pragma once

namespace cspd {

/// Sends a copy of `fd` over `socket` (with one byte, as a message needs). False on failure.
bool send_descriptor(int socket, int fd);

/// Receives one descriptor (close-on-exec): >= 0, or -1 at the end of the stream, or -2 when
/// nothing has come (non-blocking socket) or the message carried none.
int receive_descriptor(int socket);

}  // namespace cspd
