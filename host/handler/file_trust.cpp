#include "handler/file_trust.hpp"

#include <unistd.h>

#include <system_error>

namespace cspd {

namespace {
/// A folder handlers may come from: root or the server's user owns it, and others may not write
/// in it -- or may only add names of their own (the sticky bit, as on /tmp; Kubernetes mounts
/// ConfigMaps so): an entry root or this user owns cannot then be replaced by anyone else.
std::string folder_trust_problem(const std::filesystem::path& folder) {
    const uid_t me = ::geteuid();
    struct stat dir;
    if (::stat(folder.c_str(), &dir) != 0) return "cannot stat its folder " + folder.string();
    if (dir.st_uid != 0 && dir.st_uid != me)
        return "its folder " + folder.string() + " is owned by uid " + std::to_string(dir.st_uid) +
               ", neither root nor the server's user";
    if ((dir.st_mode & S_IWOTH) && !(dir.st_mode & S_ISVTX))
        return "its folder is writable by others (chmod o-w " + folder.string() + ")";
    return {};
}
}  // namespace

std::string trust_problem(const struct stat& file, const std::filesystem::path& path) {
    const uid_t me = ::geteuid();
    if (file.st_uid != 0 && file.st_uid != me)
        return "owned by uid " + std::to_string(file.st_uid) + ", neither root nor the server's user";
    if (file.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others (chmod go-w)";
    if (std::string why = folder_trust_problem(path.parent_path()); !why.empty()) return why;
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (ec) return "cannot resolve " + path.string() + ": " + ec.message();
    if (real.parent_path() != std::filesystem::canonical(path.parent_path(), ec))
        return folder_trust_problem(real.parent_path());
    return {};
}

}  // namespace cspd
