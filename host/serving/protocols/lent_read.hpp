// One read of a long-lived session (HTTP/2, WebSocket) into a buffer the loop lends for just that
// read: the bytes are handed to `process` while the buffer is lent, and the buffer goes back at
// once, so an idle connection holds none.
#pragma once

#include "serving/buffer_pool.hpp"
#include "serving/transport/transport.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

/// What came of the read: `done` (the bytes went to `process(char* bytes, std::size_t size)`),
/// `would_block`, `closed`, or `failed` (also when the loop had no buffer to lend: logged).
template <class Process>
Transport::Io read_lent(BufferPool& buffers, Transport& transport, const char* address, unsigned short port,
                        Process process) {
    char* buffer = buffers.acquire();
    if (!buffer) {
        spdlog::error("client {}:{}: no memory for a read buffer; closing", address, port);
        return Transport::Io::failed;
    }
    const Transport::Moved got = transport.read(buffer, BufferPool::kBufferSize);
    if (got.io == Transport::Io::done) process(buffer, got.bytes);
    buffers.release(buffer);
    return got.io;
}

}  // namespace cspd
