// Messages over a Unix socket that may carry a descriptor (SCM_RIGHTS): the vetting fork server's
// requests, and the key process's channels and connections.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string_view>

namespace cspd {

/// Sends `text` as one message and, if `fd` >= 0, a copy of that descriptor with it. False on failure.
bool send_message(int socket, std::string_view text, int fd = -1);

/// Receives one message into `buffer` (and the descriptor it carries into `*fd`, close-on-exec;
/// one that was not asked for is closed): its length, 0 at the end of the stream, -1 on error
/// (errno; EAGAIN when `dont_wait` and nothing waits).
ssize_t receive_message(int socket, char* buffer, std::size_t size, int* fd = nullptr, bool dont_wait = false);

/// A descriptor alone (with one byte, as a message needs one).
inline bool send_descriptor(int socket, int fd) { return send_message(socket, "f", fd); }

/// One descriptor, without waiting: >= 0, or -1 at the end of the stream (or on an error), or -2
/// when nothing has come or the message carried none.
int receive_descriptor(int socket);

}  // namespace cspd
