#include "handler/data_folders.hpp"

#include "handler/host_services.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace cspd {

const std::string* handler_data_folder(std::string_view name) {
    const std::filesystem::path& root = host_services().data_dir;
    if (root.empty() || name.empty() || name.find('/') != std::string_view::npos) return nullptr;
    static std::mutex mutex;
    static std::map<std::string, std::string, std::less<>> made;  // name -> path; never erased
    std::lock_guard lock(mutex);
    if (const auto it = made.find(name); it != made.end()) return it->second.empty() ? nullptr : &it->second;
    std::string folder = (root / std::string(name)).string();
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
        spdlog::error("handler {}: cannot make its data folder {}: {}", name, folder, std::strerror(errno));
        folder.clear();  // said once; asked again, it stays absent
    }
    const std::string& kept = made.emplace(std::string(name), std::move(folder)).first->second;
    return kept.empty() ? nullptr : &kept;
}

}  // namespace cspd
