// Checks that bytes are well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// past U+10FFFF) as they arrive, in pieces: a text message's fragments, a close reason. A
// sequence cut by the end of one piece goes on in the next.
#pragma once

#include <cstdint>
#include <string_view>

namespace cspd::ws {

class Utf8Validator {
public:
    /// False as soon as the bytes so far cannot begin valid UTF-8; stays false.
    bool feed(std::string_view bytes);
    /// Every sequence fed so far is whole (true for nothing fed).
    bool complete() const { return !failed_ && need_ == 0; }
    void reset() { need_ = 0, lo_ = 0x80, hi_ = 0xBF, failed_ = false; }

    /// The whole of `text` is valid UTF-8.
    static bool valid(std::string_view text) {
        Utf8Validator v;
        return v.feed(text) && v.complete();
    }

private:
    std::uint8_t need_ = 0;  // continuation bytes still owed by the sequence in progress
    std::uint8_t lo_ = 0x80, hi_ = 0xBF;  // the range of the next continuation byte
    bool failed_ = false;
};

}  // namespace cspd::ws
