#include "routing/mime_types.hpp"

#include "common/ascii.hpp"

#include <array>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

namespace cspd {
namespace {

/// What the built-in table does not know.
constexpr std::string_view kUnknown = "application/octet-stream";

/// The built-in table: the types browsers care most about, with the charset this server means.
std::string_view builtin_type(std::string_view ext) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 28> table{{
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"json", "application/json"},
        {"txt", "text/plain; charset=utf-8"},
        {"md", "text/markdown; charset=utf-8"},
        {"csv", "text/csv; charset=utf-8"},
        {"xml", "application/xml"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"avif", "image/avif"},
        {"ico", "image/x-icon"},
        {"woff", "font/woff"},
        {"woff2", "font/woff2"},
        {"ttf", "font/ttf"},
        {"otf", "font/otf"},
        {"pdf", "application/pdf"},
        {"wasm", "application/wasm"},
        {"zip", "application/zip"},
        {"gz", "application/gzip"},
        {"mp4", "video/mp4"},
        {"webm", "video/webm"},
    }};
    for (const auto& [known, type] : table)
        if (iequals(ext, known)) return type;
    return kUnknown;
}

}  // namespace

MimeTypes MimeTypes::parse(std::string_view text) {
    MimeTypes types;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        std::istringstream words{std::string(line)};
        std::string type, ext;
        if (!(words >> type) || type.find('/') == std::string::npos) continue;
        // Text is served as UTF-8, the charset this server's files are assumed to be in.
        if (type.starts_with("text/")) type += "; charset=utf-8";
        while (words >> ext) {
            for (char& c : ext) c = ascii_lower(c);
            types.by_extension_.try_emplace(ext, type);  // the first line naming an extension wins
        }
    }
    return types;
}

const MimeTypes& MimeTypes::system() {
    static const MimeTypes types = [] {
        std::ifstream in("/etc/mime.types");
        std::ostringstream text;
        text << in.rdbuf();
        return parse(text.str());
    }();
    return types;
}

std::string_view MimeTypes::find(std::string_view ext) const {
    std::string lower(ext);
    for (char& c : lower) c = ascii_lower(c);
    const auto it = by_extension_.find(lower);
    return it == by_extension_.end() ? std::string_view{} : std::string_view(it->second);
}

std::string_view content_type_for(std::string_view file_name) {
    auto dot = file_name.rfind('.');
    auto slash = file_name.rfind('/');
    if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return kUnknown;
    const std::string_view ext = file_name.substr(dot + 1);
    // Debian's /etc/mime.types (package media-types) first; the built-in table where it is silent.
    if (const std::string_view type = MimeTypes::system().find(ext); !type.empty()) return type;
    return builtin_type(ext);
}

}  // namespace cspd
