#include "handler/handler_name.hpp"

namespace cspd {

bool is_valid_handler_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 255) return false;
    for (char c : name) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::string handler_name_of_file(std::string_view file_name, bool sources) {
    for (std::string_view suffix : {".so", ".cpp", ".c"}) {
        if (suffix != ".so" && !sources) continue;
        if (file_name.size() <= suffix.size() || !file_name.ends_with(suffix)) continue;
        const std::string_view name = file_name.substr(0, file_name.size() - suffix.size());
        return is_valid_handler_name(name) ? std::string(name) : std::string{};
    }
    return {};
}

std::string handler_name_of_config(std::string_view file_name) {
    for (std::string_view suffix : {".conf", ".json"}) {
        if (file_name.size() <= suffix.size() || !file_name.ends_with(suffix)) continue;
        const std::string_view name = file_name.substr(0, file_name.size() - suffix.size());
        return is_valid_handler_name(name) ? std::string(name) : std::string{};
    }
    return {};
}

}  // namespace cspd
