#include "routing/mime_types.hpp"

#include "common/ascii.hpp"

#include <array>
#include <utility>

namespace cspd {

std::string_view content_type_for(std::string_view file_name) {
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
    auto dot = file_name.rfind('.');
    auto slash = file_name.rfind('/');
    if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
        return "application/octet-stream";
    std::string_view ext = file_name.substr(dot + 1);
    for (const auto& [known, type] : table)
        if (iequals(ext, known)) return type;
    return "application/octet-stream";
}

}  // namespace cspd
