#include "process/file_rules.hpp"

#include "common/unique_fd.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>

namespace cspd {
namespace {

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

// Later ABIs' rights, which Debian 12's kernel headers do not name yet.
constexpr std::uint64_t kTruncate = 1ULL << 14;    // ABI 3
constexpr std::uint64_t kScopeSignal = 1ULL << 1;  // ABI 6

constexpr std::uint64_t kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kRun = kRead | LANDLOCK_ACCESS_FS_EXECUTE;
// Rights that mean something on a file (the others are a folder's: what may be made beneath).
constexpr std::uint64_t kFileRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | kTruncate;

/// The ruleset's attribute as the newest ABI lays it out; an older kernel is given only its prefix.
struct RulesetAttr {
    std::uint64_t handled_access_fs = 0;
    std::uint64_t handled_access_net = 0;  // ABI 4; never handled here: handlers reach databases
    std::uint64_t scoped = 0;              // ABI 6
};

struct __attribute__((packed)) PathBeneathAttr {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
};

/// Every file right this ABI knows, but device ioctls (ABI 5): a file the rules let a process
/// open may be used as it could be before.
std::uint64_t handled_rights(int abi) {
    std::uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0-12
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= kTruncate;
    return rights;
}

std::uint64_t write_rights(std::uint64_t handled) {
    return handled & ~(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_EXECUTE);
}

bool world_readable(const struct stat& st) {
    if (S_ISDIR(st.st_mode)) return (st.st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH);
    return (st.st_mode & S_IROTH) != 0;
}

/// Collects rules for what anyone may read beneath `folder` (open as `dir`); true if that is all
/// of it (then the caller may grant the folder whole instead). By descriptor (fstatat, readdir):
/// every worker walks /etc as it starts, and a walk by path cost it twice as much.
bool collect_readable(const std::filesystem::path& top, const std::filesystem::path& folder, int dir_fd,
                      const std::vector<std::filesystem::path>& never, const std::vector<std::filesystem::path>& granted,
                      std::vector<std::filesystem::path>& parts, std::vector<std::filesystem::path>& elsewhere, int depth) {
    if (depth > 16) return false;
    const int listed = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (listed < 0) return false;
    DIR* dir = ::fdopendir(listed);
    if (!dir) {
        ::close(listed);
        return false;
    }
    bool whole = true;
    std::vector<std::filesystem::path> mine;
    std::error_code ec;
    for (;;) {
        errno = 0;
        const dirent* item = ::readdir(dir);
        if (!item) {
            whole = whole && errno == 0;
            break;
        }
        const std::string_view name = item->d_name;
        if (name == "." || name == "..") continue;
        const std::filesystem::path entry = folder / name;
        bool secret = false;  // a key folder at, beneath or above the entry
        for (const auto& n : never) secret = secret || is_beneath(entry, n) || is_beneath(n, entry);
        struct stat st {};
        if (secret || ::fstatat(::dirfd(dir), item->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            whole = false;
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            // A link's target is judged where it lies: /etc/resolv.conf may point into /run. One
            // into a folder granted already (/etc/ssl/certs' hundreds into /usr/share), or within
            // the walk (ssl/certs' hash links to their .pem, judged as themselves), needs nothing.
            char written[PATH_MAX];
            const ssize_t size = ::readlinkat(::dirfd(dir), item->d_name, written, sizeof written - 1);
            if (size <= 0) continue;
            const std::filesystem::path lexical =
                (folder / std::string_view(written, static_cast<std::size_t>(size))).lexically_normal();
            bool covered = is_beneath(lexical, top);
            for (const auto& root : granted) covered = covered || is_beneath(lexical, root);
            if (covered) continue;
            const std::filesystem::path target = std::filesystem::canonical(entry, ec);
            struct stat target_st {};
            if (ec || ::stat(target.c_str(), &target_st) != 0 || !world_readable(target_st)) continue;
            bool target_secret = false;
            for (const auto& n : never) target_secret = target_secret || is_beneath(target, n) || is_beneath(n, target);
            for (const auto& root : granted) covered = covered || is_beneath(target, root);
            if (!target_secret && !covered && !is_beneath(target, top)) elsewhere.push_back(target);
            continue;
        }
        if (!world_readable(st)) {
            whole = false;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            std::vector<std::filesystem::path> inner;
            const UniqueFd sub(::openat(::dirfd(dir), item->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub && collect_readable(top, entry, sub.get(), never, granted, inner, elsewhere, depth + 1))
                mine.push_back(entry);
            else {
                whole = false;
                mine.insert(mine.end(), inner.begin(), inner.end());
            }
        } else {
            mine.push_back(entry);
        }
    }
    ::closedir(dir);
    parts.insert(parts.end(), mine.begin(), mine.end());
    return whole;
}

bool add_rule(int ruleset, const std::filesystem::path& path, std::uint64_t access, std::string& why) {
    const UniqueFd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!fd) return true;  // nothing there: nothing to allow
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return true;
    if (!S_ISDIR(st.st_mode)) access &= kFileRights;
    if (access == 0) return true;
    const PathBeneathAttr attr{access, fd.get()};
    if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) != 0) {
        why = "Landlock refuses a rule for " + path.string() + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

}  // namespace

bool is_beneath(const std::filesystem::path& path, const std::filesystem::path& folder) {
    // By text (paths are normalised): the walk of /etc asks this thousands of times.
    std::string_view p = path.native(), f = folder.native();
    while (f.size() > 1 && f.back() == '/') f.remove_suffix(1);
    if (!p.starts_with(f)) return false;
    return p.size() == f.size() || p[f.size()] == '/' || f == "/";
}

std::filesystem::path normal_path(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path out = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
    if (ec) out = std::filesystem::absolute(path).lexically_normal();
    while (!out.has_filename() && out.has_relative_path()) out = out.parent_path();  // "/x/certs/" -> "/x/certs"
    return out;
}

int landlock_abi() noexcept {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? static_cast<int>(abi) : 0;
}

void add_world_readable(FileRules& rules, const std::filesystem::path& folder,
                        const std::vector<std::filesystem::path>& never) {
    std::vector<std::filesystem::path> parts, elsewhere, granted = rules.read;
    granted.insert(granted.end(), rules.run.begin(), rules.run.end());
    const UniqueFd top(::open(folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (top && collect_readable(folder, folder, top.get(), never, granted, parts, elsewhere, 0))
        rules.read.push_back(folder);
    else
        rules.read.insert(rules.read.end(), parts.begin(), parts.end());
    rules.read.insert(rules.read.end(), elsewhere.begin(), elsewhere.end());
}

bool apply_file_rules(const FileRules& rules, std::string& why) {
    const int abi = landlock_abi();
    if (abi <= 0) {
        why = "this kernel has no Landlock";
        return false;
    }
    RulesetAttr attr;
    attr.handled_access_fs = handled_rights(abi);
    std::size_t attr_size = sizeof attr.handled_access_fs;
    if (abi >= 4) attr_size = offsetof(RulesetAttr, scoped);
    if (abi >= 6) {
        attr.scoped = rules.scope_signals ? kScopeSignal : 0;
        attr_size = sizeof attr;
    }
    const UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
    if (!ruleset) {
        why = std::string("Landlock: cannot make a ruleset: ") + std::strerror(errno);
        return false;
    }
    const std::uint64_t handled = attr.handled_access_fs;
    for (const auto& path : rules.read)
        if (!add_rule(ruleset.get(), path, kRead, why)) return false;
    for (const auto& path : rules.run)
        if (!add_rule(ruleset.get(), path, kRun, why)) return false;
    for (const auto& path : rules.write)
        if (!add_rule(ruleset.get(), path, write_rights(handled), why)) return false;
    for (const auto& path : rules.append)
        if (!add_rule(ruleset.get(), path, LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG, why))
            return false;
    // Unprivileged processes may restrict themselves only once they cannot gain privileges.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        why = std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
        return false;
    }
    if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
        why = std::string("Landlock: cannot restrict this process: ") + std::strerror(errno);
        return false;
    }
    return true;
}

}  // namespace cspd
