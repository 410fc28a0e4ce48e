#include "websocket/utf8_validator.hpp"

#include <cstring>

namespace cspd::ws {

bool Utf8Validator::feed(std::string_view bytes) {
    if (failed_) return false;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const unsigned char* end = p + bytes.size();
    while (p < end) {
        if (need_ == 0) {
            // Most text is ASCII: skip it eight bytes at a time.
            while (end - p >= 8) {
                std::uint64_t word;
                std::memcpy(&word, p, 8);
                if (word & 0x8080808080808080ull) break;
                p += 8;
            }
            if (p == end) break;
            const unsigned char b = *p++;
            if (b < 0x80) continue;
            lo_ = 0x80, hi_ = 0xBF;
            if (b >= 0xC2 && b <= 0xDF) {
                need_ = 1;
            } else if (b >= 0xE0 && b <= 0xEF) {
                need_ = 2;
                if (b == 0xE0) lo_ = 0xA0;       // overlong
                else if (b == 0xED) hi_ = 0x9F;  // surrogates
            } else if (b >= 0xF0 && b <= 0xF4) {
                need_ = 3;
                if (b == 0xF0) lo_ = 0x90;       // overlong
                else if (b == 0xF4) hi_ = 0x8F;  // past U+10FFFF
            } else {
                failed_ = true;
                return false;
            }
        } else {
            const unsigned char b = *p++;
            if (b < lo_ || b > hi_) {
                failed_ = true;
                return false;
            }
            lo_ = 0x80, hi_ = 0xBF;
            --need_;
        }
    }
    return true;
}

}  // namespace cspd::ws
