// What a connection has yet to write, in order: bytes the transport did not take, and
// static files sent from where they are. Usually empty: responses go out with one write
// straight from the loop's output buffer, and only what the transport does not take is
// queued here. No I/O but through the transport it is given.
#pragma once

#include "routing/static_files.hpp"
#include "serving/transport/transport.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

class OutputQueue {
public:
    enum class Progress {
        done,         ///< everything written; the queue is empty
        would_block,  ///< the socket is full: wait until it is writable, then write again
        failed,       ///< the peer is gone (or another socket error): close
        file_shrank,  ///< a file got shorter while being sent: the promised length cannot be kept
    };
    struct Written {
        Progress progress;
        std::size_t bytes;  ///< written by this call
    };

    bool empty() const { return waiting_ == 0; }
    /// Bytes waiting, files included.
    std::size_t size() const { return waiting_; }

    /// Writes `bytes` at once if nothing waits, and queues what the transport does not take;
    /// behind what waits otherwise.
    Written send(Transport& transport, std::string_view bytes);
    /// The same for bytes it may keep: what the transport does not take is moved in, not copied.
    Written send_owned(Transport& transport, std::string&& bytes);
    /// Queues `bytes` behind what waits, without writing.
    void append(std::string_view bytes);
    void append_owned(std::string&& bytes);
    /// Queues `head`, then the bytes of `file`, behind what waits.
    void append_file(std::string_view head, StaticFiles::File file);
    /// Writes what it can without blocking.
    Written write_to(Transport& transport);

private:
    struct Item {
        std::string bytes;
        StaticFiles::File file;  // when open, the item is the file's bytes, not `bytes`
        std::size_t sent = 0;
        std::size_t size() const { return file.is_open() ? file.size : bytes.size(); }
    };

    std::vector<Item> items_;
    std::size_t front_ = 0;    // first item not yet written
    std::size_t waiting_ = 0;  // bytes not yet written, over all items
};

}  // namespace cspd
