// A line of text built without the C library's formatting (snprintf may take locks or
// allocate, so it is not async-signal-safe): for what a crash handler or an exit hook writes.
// Text that does not fit is cut; the line is never written past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cspd {

template <std::size_t Capacity>
class SignalSafeLine {
public:
    SignalSafeLine& text(std::string_view s) noexcept {
        for (char c : s) put(c);
        return *this;
    }
    SignalSafeLine& text(const char* s) noexcept { return s ? text(std::string_view(s)) : text("(null)"); }
    SignalSafeLine& number(std::uint64_t value) noexcept {
        char digits[20];
        int n = 0;
        do digits[n++] = static_cast<char>('0' + value % 10); while ((value /= 10) != 0);
        while (n > 0) put(digits[--n]);
        return *this;
    }
    SignalSafeLine& number(std::int64_t value) noexcept {
        if (value >= 0) return number(static_cast<std::uint64_t>(value));
        put('-');
        return number(std::uint64_t{0} - static_cast<std::uint64_t>(value));
    }
    SignalSafeLine& number(int value) noexcept { return number(static_cast<std::int64_t>(value)); }
    /// `width` hex digits at least (zero-padded), lower case.
    SignalSafeLine& hex(std::uint64_t value, int width = 1) noexcept {
        char digits[16];
        int n = 0;
        do digits[n++] = "0123456789abcdef"[value & 0xf]; while ((value >>= 4) != 0);
        while (n < width && n < 16) digits[n++] = '0';
        while (n > 0) put(digits[--n]);
        return *this;
    }
    SignalSafeLine& pointer(const void* address) noexcept {
        return address ? text("0x").hex(reinterpret_cast<std::uintptr_t>(address)) : text("(nil)");
    }

    const char* data() const noexcept { return text_; }
    std::size_t size() const noexcept { return size_; }
    std::string_view view() const noexcept { return {text_, size_}; }

private:
    void put(char c) noexcept {
        if (size_ < Capacity) text_[size_++] = c;
    }
    char text_[Capacity];
    std::size_t size_ = 0;
};

}  // namespace cspd
