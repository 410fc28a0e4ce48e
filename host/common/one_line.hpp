// Text from a handler as one line of the log: control bytes are shown as escapes (\n, \x1b),
// never obeyed, so no handler can forge a log line or a terminal sequence.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

/// `text` itself when it has no control bytes; else its escaped copy, made in `out`.
inline std::string_view one_line(std::string_view text, std::string& out) {
    static constexpr char hex[] = "0123456789abcdef";
    bool clean = true;
    for (char c : text) clean = clean && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    if (clean) return text;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u != 0x7f) out.push_back(c);
        else if (c == '\n') out.append("\\n");
        else if (c == '\r') out.append("\\r");
        else if (c == '\t') out.append("\\t");
        else out.append("\\x").push_back(hex[u >> 4]), out.push_back(hex[u & 15]);
    }
    return out;
}

}  // namespace cspd
