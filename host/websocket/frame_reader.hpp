// The client's side of a WebSocket connection, read frame by frame (RFC 6455 §5): a state
// machine with no I/O, fed whatever bytes came, in any pieces. It checks what §5 requires of
// every frame -- masked, no reserved bits but those an extension took, known opcodes, control
// frames whole and at most 125 bytes, continuations only inside a message -- unmasks payloads in
// place, and tells its Sink of data as it comes and of control frames whole. Message sizes,
// UTF-8 and what a frame means are the Sink's to judge.
#pragma once

#include "websocket/frame_head.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace cspd::ws {

class FrameReader {
public:
    /// Why the bytes cannot be a WebSocket client's: each fails the connection with 1002.
    enum class Error : std::uint8_t {
        none,
        unmasked,                ///< a client frame without a mask (§5.1)
        reserved_bits,           ///< RSV1-3 set without an extension that defines them (§5.2)
        unknown_opcode,          ///< 0x3-0x7, 0xB-0xF
        fragmented_control,      ///< a control frame without FIN (§5.5)
        control_too_long,        ///< a control frame over 125 bytes (§5.5)
        length_too_large,        ///< a 64-bit length with its top bit set (§5.2)
        unexpected_continuation, ///< a continuation frame outside a message (§5.4)
        expected_continuation,   ///< a new text or binary frame inside a fragmented message (§5.4)
    };
    static const char* describe(Error error);

    /// Told of what the frames carry; false from any of these stops the reading where it is.
    class Sink {
    public:
        /// A text or binary frame begins: `opcode` is its message's (text or binary, also for
        /// continuations), `first` whether it opens the message, `rsv1` its RSV1 bit (only when an
        /// extension allows it), `size` the payload it announces.
        virtual bool on_data_frame(Opcode opcode, bool first, bool fin, bool rsv1, std::uint64_t size) = 0;
        /// Unmasked payload bytes of the current data frame, in order.
        virtual bool on_data(std::string_view payload) = 0;
        /// The current data frame is whole; with `fin`, so is its message.
        virtual bool on_data_frame_end(bool fin) = 0;
        /// A whole control frame (close, ping, pong) and its unmasked payload.
        virtual bool on_control(Opcode opcode, std::string_view payload) = 0;

    protected:
        ~Sink() = default;
    };

    struct Result {
        std::size_t consumed = 0;  ///< bytes used; less than given when stopped or failed
        Error error = Error::none;
        bool stopped = false;  ///< the Sink said stop
    };

    /// `allow_rsv1`: an extension (permessage-deflate) gave RSV1 a meaning on a message's first frame.
    explicit FrameReader(bool allow_rsv1 = false) : allow_rsv1_(allow_rsv1) {}
    void allow_rsv1(bool allow) { allow_rsv1_ = allow; }

    /// Reads `size` bytes at `data`, unmasking payloads in place. After an error the reader
    /// stays failed.
    Result feed(char* data, std::size_t size, Sink& sink);

    /// Inside a fragmented message, or part way through a frame.
    bool busy() const { return in_message_ || head_have_ > 0 || in_payload_; }

private:
    /// Checks the head once it is whole and sets up the payload; Error::none if it is sound.
    Error begin_frame();
    void unmask(char* data, std::size_t size);

    unsigned char head_[kMaxHeadBytes];
    std::uint8_t head_have_ = 0;
    std::uint8_t head_need_ = 2;
    bool in_payload_ = false;
    bool allow_rsv1_;
    bool in_message_ = false;
    bool fin_ = false;
    bool rsv1_ = false;
    Opcode opcode_ = Opcode::continuation;          // the current frame's, as sent
    Opcode message_opcode_ = Opcode::continuation;  // text or binary while in_message_
    std::uint64_t payload_left_ = 0;
    unsigned char mask_[4] = {};
    std::uint8_t mask_at_ = 0;
    std::uint8_t control_size_ = 0;
    // A control frame's payload cut by the end of a feed waits here (made when first needed: most
    // come whole, and an idle connection should stay small).
    std::unique_ptr<char[]> control_;
    Error failed_ = Error::none;
};

}  // namespace cspd::ws
