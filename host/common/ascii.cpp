#include "common/ascii.hpp"

#include <array>

namespace cspd {

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

bool is_token_char(char c) noexcept {
    static constexpr auto table = [] {
        std::array<bool, 256> t{};
        for (int ch = 0; ch < 256; ++ch)
            t[ch] =
                (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                (ch != 0 && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(ch)) != std::string_view::npos);
        return t;
    }();
    return table[static_cast<unsigned char>(c)];
}

bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_token_char(c)) return false;
    return true;
}

}  // namespace cspd
