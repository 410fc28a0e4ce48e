// File extension -> Content-Type for static files: Debian's /etc/mime.types (package
// media-types), read once, then a built-in table for what it does not name.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

namespace cspd {

class MimeTypes {
public:
    /// The mime.types format: "type ext ext..." lines, # comments. text/* types get "; charset=utf-8".
    static MimeTypes parse(std::string_view text);
    /// /etc/mime.types, read on first use (empty if it is not there).
    static const MimeTypes& system();

    /// The type for `ext` (no dot, any case), or empty.
    std::string_view find(std::string_view ext) const;
    std::size_t size() const { return by_extension_.size(); }

private:
    std::unordered_map<std::string, std::string> by_extension_;
};

/// "text/html; charset=utf-8" for "index.html"; "application/octet-stream" when unknown.
std::string_view content_type_for(std::string_view file_name);

}  // namespace cspd
