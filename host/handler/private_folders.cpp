#include "handler/private_folders.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <system_error>

namespace cspd {
namespace {
constexpr std::string_view kPrefix = "cspd-";

/// The pid in "cspd-PID-XXXXXX", if the name is one of ours.
std::optional<pid_t> owner_pid(std::string_view name) {
    if (!name.starts_with(kPrefix)) return std::nullopt;
    name.remove_prefix(kPrefix.size());
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    // mkdtemp's six characters follow the dash.
    if (ec != std::errc{} || pid <= 0 || end == name.data() + name.size() || *end != '-' ||
        name.data() + name.size() - end != 7)
        return std::nullopt;
    return pid;
}

constexpr const char* kOwnerFile = ".owner";

uid_t workers_uid = static_cast<uid_t>(-1);

/// A folder, not a link, owned by this user or the workers': the only kind removed.
bool ours(const std::filesystem::path& folder) {
    struct stat st;
    return ::lstat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
           (st.st_uid == ::geteuid() || st.st_uid == workers_uid);
}

/// Whether a live process still holds the folder's owner lock (one without the file, made before
/// its owner claimed it or by an older cspd, is judged by its pid alone).
bool still_held(const std::filesystem::path& folder) {
    const UniqueFd owner(::open((folder / kOwnerFile).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!owner) return false;
    return ::flock(owner.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

template <class Wanted>
std::size_t remove_where(const std::filesystem::path& parent, Wanted wanted) {
    std::size_t removed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::optional<pid_t> pid = owner_pid(it->path().filename().native());
        if (!pid || !wanted(*pid) || !ours(it->path()) || still_held(it->path())) continue;
        std::error_code ignored;
        if (std::filesystem::remove_all(it->path(), ignored) != static_cast<std::uintmax_t>(-1)) ++removed;
    }
    return removed;
}
}  // namespace

std::filesystem::path private_folder_parent() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

std::string private_folder_pattern(const std::filesystem::path& parent, pid_t pid) {
    return (parent / (std::string(kPrefix) + std::to_string(pid) + "-XXXXXX")).string();
}

UniqueFd claim_private_folder(const std::filesystem::path& folder) {
    UniqueFd owner(::open((folder / kOwnerFile).c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (owner && ::flock(owner.get(), LOCK_EX | LOCK_NB) != 0) owner.reset();
    return owner;
}

PrivateFolder::PrivateFolder(const std::filesystem::path& parent) {
    std::string pattern = private_folder_pattern(parent, ::getpid());
    if (!::mkdtemp(pattern.data()))
        throw std::system_error(errno, std::system_category(), "cannot create a private folder under " + parent.string());
    path_ = pattern;
    owner_lock_ = claim_private_folder(path_);
}

PrivateFolder::~PrivateFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::size_t remove_private_folders_of(pid_t pid, const std::filesystem::path& parent) {
    return remove_where(parent, [pid](pid_t owner) { return owner == pid; });
}

void sweep_folders_of_user(uid_t uid) { workers_uid = uid; }

std::size_t remove_orphaned_private_folders(const std::filesystem::path& parent) {
    return remove_where(parent, [](pid_t owner) { return ::kill(owner, 0) != 0 && errno == ESRCH; });
}

}  // namespace cspd
