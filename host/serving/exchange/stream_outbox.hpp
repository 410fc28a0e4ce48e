// The body of one streamed reply on its way from the handler (any thread) to the loop that
// owns the connection: compressed piece by piece if its answer is (each piece flushed, so the
// client decodes it at once: a server-sent event is not held back), then framed as it is
// written, as its protocol chose (HTTP/1.1 chunks, raw bytes for HTTP/1.0 and HTTP/2, nothing
// for HEAD), bounded by a high-water mark. A writer on
// an event loop is told CSP_AGAIN past the mark; a writer on any other thread waits for room.
// The loop takes what waits and tells the outbox how much the socket still holds (the
// backlog), which wakes them. The head is not here: its session writes it.
//
// Shared by the writer and the loop under one mutex; no I/O, so it can be tested alone.
#pragma once

#include "compression/body_encoder.hpp"

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace cspd {

class StreamOutbox {
public:
    enum class Framing { chunked, raw, none };
    /// Past this much waiting (here and in the socket's backlog) writers are held back.
    static constexpr std::size_t kHighWater = 256 * 1024;
    /// A loop writer that ignores CSP_AGAIN is refused past this: the stream is cut. (A writer that
    /// waits for room is never cut: it waited until the bytes held were below the mark.)
    static constexpr std::size_t kHardLimit = 32 * kHighWater;

    /// What a write came to.
    struct Result {
        int code;           ///< 0, CSP_AGAIN, or -1 (closed, ended, or past the hard limit)
        bool poke = false;  ///< the loop must be told that bytes wait (the first since it took them)
        bool overflow = false;  ///< refused for the hard limit: the caller cuts the stream
        bool broken = false;    ///< the coder failed (no memory): what was sent cannot be decoded
                                ///< on, so the caller cuts the stream (no last chunk goes)
    };

    /// `coding`: each piece is compressed in it, and flushed, before its framing (identity: the
    /// pieces go as written; never for Framing::none). Throws std::bad_alloc without memory for it.
    explicit StreamOutbox(Framing framing, ContentCoding coding = ContentCoding::identity);
    ~StreamOutbox();

    /// What the coder did so far: its coding (identity if none runs) and the bytes in and out.
    struct Coded {
        ContentCoding coding = ContentCoding::identity;
        std::size_t bytes_in = 0, bytes_out = 0;
    };
    Coded coded();

    /// Appends `bytes` as one piece of the body; `may_wait`: off an event loop, wait for room.
    Result write(std::string_view bytes, bool may_wait);
    /// Appends `head` and `body` as one piece (a WebSocket frame: nothing comes between them).
    Result write_parts(std::string_view head, std::string_view body, bool may_wait);
    /// Appends `last` (a WebSocket close frame) and ends: later writes are refused.
    Result end_with(std::string_view last);
    /// Appends one server-sent event (`event` holds no line break; empty: no event line).
    Result event(std::string_view event, std::string_view data, bool may_wait);
    /// Appends the end of the body (the last chunk); later writes are refused.
    Result end();

    /// Loop: everything that waits, taken out. It counts as backlog until set_backlog. `ended`, if
    /// given, says whether the end (end() or end_with()) is among the bytes taken.
    std::string take(bool* ended = nullptr);
    /// Loop: the socket still holds `backlog` bytes of the stream. Wakes waiting writers when
    /// there is room; true when a loop writer was told CSP_AGAIN and may write again.
    bool set_backlog(std::size_t backlog);
    /// Loop: nobody will see more (the client left, the stream was cut or is done): writers get
    /// -1 from now on, and waiting ones wake.
    void close();

private:
    template <class Append>
    Result put(std::size_t size, bool may_wait, Append append);
    /// Appends `piece` (already what goes on the wire inside the framing) framed.
    void append_framed(std::string_view piece);
    /// The coder and its buffers go (the stream ended or will not go on).
    void drop_coder();
    std::size_t held() const { return bytes_.size() + backlog_; }

    const Framing framing_;
    std::unique_ptr<BodyEncoder> encoder_;
    std::string plain_, coded_;  // a piece before and after the encoder (kept for their capacity)
    Coded totals_;
    std::mutex mutex_;
    std::condition_variable room_;
    std::string bytes_;         // framed, waiting for the loop
    std::size_t backlog_ = 0;   // what the connection's socket has not taken yet
    bool poke_pending_ = false; // the loop was told and has not taken yet
    bool told_again_ = false;   // a loop writer got CSP_AGAIN and waits for room
    bool ended_ = false;
    bool closed_ = false;
};

}  // namespace cspd
