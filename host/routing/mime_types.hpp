// File extension -> Content-Type for static files.
#pragma once

#include <string_view>

namespace cspd {

/// "text/html; charset=utf-8" for "index.html"; "application/octet-stream" when unknown.
std::string_view content_type_for(std::string_view file_name);

}  // namespace cspd
