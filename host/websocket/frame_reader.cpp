#include "websocket/frame_reader.hpp"

#include <algorithm>
#include <cstring>

namespace cspd::ws {

const char* FrameReader::describe(Error error) {
    switch (error) {
    case Error::none: return "no error";
    case Error::unmasked: return "an unmasked client frame";
    case Error::reserved_bits: return "reserved bits set without an extension";
    case Error::unknown_opcode: return "an unknown opcode";
    case Error::fragmented_control: return "a fragmented control frame";
    case Error::control_too_long: return "a control frame over 125 bytes";
    case Error::length_too_large: return "a 64-bit length with its top bit set";
    case Error::unexpected_continuation: return "a continuation frame outside a message";
    case Error::expected_continuation: return "a new message inside a fragmented one";
    }
    return "?";
}

FrameReader::Error FrameReader::begin_frame() {
    const unsigned b0 = head_[0];
    fin_ = (b0 & 0x80) != 0;
    rsv1_ = (b0 & 0x40) != 0;
    const unsigned op = b0 & 0x0F;
    if ((b0 & 0x30) != 0) return Error::reserved_bits;
    if (op != 0x0 && op != 0x1 && op != 0x2 && op != 0x8 && op != 0x9 && op != 0xA) return Error::unknown_opcode;
    opcode_ = static_cast<Opcode>(op);
    // RSV1 means "compressed" on a message's first frame only (RFC 7692 §6.1).
    if (rsv1_ && (!allow_rsv1_ || is_control(opcode_) || opcode_ == Opcode::continuation)) return Error::reserved_bits;
    std::uint64_t size = head_[1] & 0x7F;
    const unsigned char* p = head_ + 2;
    if (size == 126) {
        size = (std::uint64_t(p[0]) << 8) | p[1];
        p += 2;
    } else if (size == 127) {
        if (p[0] & 0x80) return Error::length_too_large;
        size = 0;
        for (int i = 0; i < 8; ++i) size = (size << 8) | p[i];
        p += 8;
    }
    std::memcpy(mask_, p, 4);
    mask_at_ = 0;
    payload_left_ = size;
    if (is_control(opcode_)) {
        if (!fin_) return Error::fragmented_control;
        if (size > kMaxControlPayload) return Error::control_too_long;
    } else if (opcode_ == Opcode::continuation) {
        if (!in_message_) return Error::unexpected_continuation;
    } else if (in_message_) {
        return Error::expected_continuation;
    }
    return Error::none;
}

void FrameReader::unmask(char* data, std::size_t size) {
    auto* p = reinterpret_cast<unsigned char*>(data);
    std::size_t i = 0;
    // Eight bytes at a time with the mask turned to start where this piece does.
    if (size >= 16) {
        unsigned char turned[8];
        for (int k = 0; k < 8; ++k) turned[k] = mask_[(mask_at_ + k) & 3];
        std::uint64_t word_mask;
        std::memcpy(&word_mask, turned, 8);
        for (; i + 8 <= size; i += 8) {
            std::uint64_t word;
            std::memcpy(&word, p + i, 8);
            word ^= word_mask;
            std::memcpy(p + i, &word, 8);
        }
    }
    for (; i < size; ++i) p[i] ^= mask_[(mask_at_ + i) & 3];
    mask_at_ = static_cast<std::uint8_t>((mask_at_ + size) & 3);
}

FrameReader::Result FrameReader::feed(char* data, std::size_t size, Sink& sink) {
    Result result;
    if (failed_ != Error::none) {
        result.error = failed_;
        return result;
    }
    std::size_t at = 0;
    const auto fail = [&](Error error) {
        failed_ = error;
        result.error = error;
        result.consumed = at;
        return result;
    };
    // An empty payload is whole as soon as its head is, even at the end of the bytes.
    while (at < size || (in_payload_ && payload_left_ == 0)) {
        if (!in_payload_) {
            // The head: two bytes say how long the rest of it is.
            const std::size_t take = std::min<std::size_t>(head_need_ - head_have_, size - at);
            std::memcpy(head_ + head_have_, data + at, take);
            head_have_ = static_cast<std::uint8_t>(head_have_ + take);
            at += take;
            if (head_have_ < head_need_) break;
            if (head_need_ == 2) {
                if ((head_[1] & 0x80) == 0) return fail(Error::unmasked);
                const unsigned len7 = head_[1] & 0x7F;
                head_need_ = static_cast<std::uint8_t>(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4);
                continue;
            }
            head_have_ = 0;
            head_need_ = 2;
            if (const Error error = begin_frame(); error != Error::none) return fail(error);
            in_payload_ = true;
            if (!is_control(opcode_)) {
                const bool first = opcode_ != Opcode::continuation;
                if (first) message_opcode_ = opcode_;
                in_message_ = !fin_;
                if (!sink.on_data_frame(message_opcode_, first, fin_, rsv1_, payload_left_)) {
                    result.stopped = true;
                    break;
                }
            }
        }
        // The payload, or what of it is here.
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, size - at));
        unmask(data + at, take);
        const std::string_view piece(data + at, take);
        at += take;
        payload_left_ -= take;
        if (is_control(opcode_)) {
            std::string_view whole = piece;
            if (control_size_ > 0 || payload_left_ > 0) {  // in pieces: gathered
                if (!control_) control_ = std::make_unique<char[]>(kMaxControlPayload);
                std::memcpy(control_.get() + control_size_, piece.data(), piece.size());
                control_size_ = static_cast<std::uint8_t>(control_size_ + piece.size());
                if (payload_left_ > 0) break;
                whole = std::string_view(control_.get(), control_size_);
            }
            in_payload_ = false;
            control_size_ = 0;
            if (!sink.on_control(opcode_, whole)) {
                result.stopped = true;
                break;
            }
            continue;
        }
        if (!piece.empty() && !sink.on_data(piece)) {
            result.stopped = true;
            break;
        }
        if (payload_left_ > 0) break;
        in_payload_ = false;
        if (!sink.on_data_frame_end(fin_)) {
            result.stopped = true;
            break;
        }
    }
    result.consumed = at;
    return result;
}

}  // namespace cspd::ws
