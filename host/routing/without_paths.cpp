#include "routing/without_paths.hpp"

namespace cspd {

std::string without_paths(std::string_view text) {
    // A word is what lies between blanks, quotes, brackets, parentheses and commas; a word with a
    // '/' in it is (part of) a path and is cut to its last part. A ':' after that last '/' ends the
    // path (dlopen's "FILE: reason"). A path with a space in it keeps at most the folder name
    // before the space.
    const auto separator = [](char c) { return std::string_view(" \t\n'\"()[]{}<>,").find(c) != std::string_view::npos; };
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        if (separator(text[i])) {
            out.push_back(text[i++]);
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && !separator(text[end])) ++end;
        std::string_view word = text.substr(i, end - i);
        i = end;
        const std::size_t last_slash = word.rfind('/');
        if (last_slash == std::string_view::npos) {
            out.append(word);
            continue;
        }
        std::string_view rest;  // what follows the path in the same word (": reason")
        if (const std::size_t colon = word.find(':', last_slash); colon != std::string_view::npos) {
            rest = word.substr(colon);
            word = word.substr(0, colon);
        }
        const std::string_view trimmed = word.substr(0, word.find_last_not_of('/') + 1);  // "/a/b/" is b
        const std::string_view name = trimmed.substr(trimmed.rfind('/') + 1);
        out.append(name.empty() ? std::string_view("/") : name).append(rest);
    }
    return out;
}

}  // namespace cspd
