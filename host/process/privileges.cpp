#include "process/privileges.hpp"

#include "process/config.hpp"

#include <spdlog/spdlog.h>

#include <grp.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace cspd {

WorkerAccount worker_account(const Config& config, uid_t euid) {
    WorkerAccount account;
    if (euid != 0) return account;  // only root can become someone else
    account.name = config.user.empty() ? "nobody" : config.user;
    std::vector<char> buffer(16 * 1024);
    passwd entry{};
    passwd* found = nullptr;
    const int error = ::getpwnam_r(account.name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (!found)
        throw std::runtime_error("--user " + account.name + ": no such user" +
                                 (error ? std::string(" (") + std::strerror(error) + ")" : std::string()));
    account.uid = found->pw_uid;
    account.gid = found->pw_gid;
    account.change = account.uid != 0;
    return account;
}

void become(const WorkerAccount& account) {
    if (!account.change) return;
    if (::initgroups(account.name.c_str(), account.gid) != 0)
        throw std::runtime_error("initgroups(" + account.name + "): " + std::strerror(errno));
    if (::setresgid(account.gid, account.gid, account.gid) != 0)
        throw std::runtime_error("setresgid: " + std::string(std::strerror(errno)));
    if (::setresuid(account.uid, account.uid, account.uid) != 0)
        throw std::runtime_error("setresuid: " + std::string(std::strerror(errno)));
    // Every id changed, or a handler could take root back.
    if (::setuid(0) == 0 || ::geteuid() != account.uid || ::getegid() != account.gid)
        throw std::runtime_error("root could be regained after becoming " + account.name);
}

namespace {
/// Whether `account` has `bits` (of r=4, w=2, x=1) on a file with this stat.
bool allowed(const struct stat& st, const WorkerAccount& account, const std::vector<gid_t>& groups, unsigned bits) {
    unsigned mode;
    if (st.st_uid == account.uid)
        mode = (st.st_mode >> 6) & 7;
    else if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end())
        mode = (st.st_mode >> 3) & 7;
    else
        mode = st.st_mode & 7;
    return (mode & bits) == bits;
}
}  // namespace

namespace {
/// The groups `account` belongs to (its own and the supplementary ones).
std::vector<gid_t> groups_of(const WorkerAccount& account) {
    std::vector<gid_t> groups(64);
    int count = static_cast<int>(groups.size());
    if (::getgrouplist(account.name.c_str(), account.gid, groups.data(), &count) < 0) {
        groups.resize(static_cast<std::size_t>(count));
        ::getgrouplist(account.name.c_str(), account.gid, groups.data(), &count);
    }
    groups.resize(static_cast<std::size_t>(std::max(count, 0)));
    return groups;
}

}  // namespace

std::optional<KeyOutsider> key_outsider(const Config& config) {
    const WorkerAccount account = worker_account(config, ::geteuid());
    if (!account.change) return std::nullopt;
    return KeyOutsider{account.name, account.uid, groups_of(account)};
}

namespace {
std::string mode_text(const struct stat& st) {
    char text[8];
    std::snprintf(text, sizeof text, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return text;
}
}  // namespace

std::string folder_access_problem(const std::filesystem::path& path, const WorkerAccount& account) {
    if (!account.change) return {};
    const std::vector<gid_t> groups = groups_of(account);
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (ec) return {};  // missing: said elsewhere
    std::filesystem::path walked = "/";
    for (const auto& part : real.relative_path()) {
        struct stat st {};
        if (::stat(walked.c_str(), &st) == 0 && !allowed(st, account, groups, 1))
            return walked.string() + " does not let " + account.name + " through (mode " +
                   std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                   std::to_string(st.st_mode & 7) + ")";
        walked /= part;
    }
    struct stat st {};
    if (::stat(real.c_str(), &st) == 0 && !allowed(st, account, groups, 5))
        return real.string() + " cannot be read by " + account.name;
    return {};
}

std::string log_folder_problem(const std::filesystem::path& log_file, const WorkerAccount& account) {
    if (!account.change || log_file.empty()) return {};
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::absolute(log_file, ec).parent_path();
    struct stat st {};
    if (ec || ::stat(folder.c_str(), &st) != 0) return {};  // missing: the open says so
    if (!allowed(st, account, groups_of(account), 3)) return {};
    return "--log-file's folder " + folder.string() + " (owner uid " + std::to_string(st.st_uid) + ", mode " +
           mode_text(st) + ") can be written by " + account.name +
           ", who runs handler code: it could put a link where the file is reopened, and the master, as root, "
           "would write there. Put the log in a folder only root can write (as /var/log/cspd)";
}

void say_who_runs_handlers(const Config& config, const WorkerAccount& account) {
    if (account.change && config.user.empty())
        spdlog::warn("started as root without --user: workers and handler vetting run as nobody (uid {})", account.uid);
    else if (account.change)
        spdlog::info("workers and handler vetting run as {} (uid {})", account.name, account.uid);
    else if (::geteuid() == 0)
        spdlog::warn("--user root: handler code runs as root");
    else if (!config.user.empty())
        spdlog::warn("--user {} is ignored: cspd was not started as root", config.user);
}

void check_workers_can_read(const Config& config, const WorkerAccount& account) {
    for (const auto& folder : {config.handlers_dir, config.www_dir})
        if (const std::string problem = folder_access_problem(folder, account); !problem.empty())
            throw std::runtime_error("workers run as " + account.name + ", but " + problem +
                                     ": give them access, or name another account with --user");
}

void hand_over(const std::filesystem::path& path, const WorkerAccount& account) {
    if (!account.change || path.empty() || path == "-") return;
    if (::lchown(path.c_str(), account.uid, account.gid) != 0 && errno != ENOENT)
        spdlog::warn("cannot give {} to {}: {}; workers may not write it", path.string(), account.name,
                     std::strerror(errno));
}

}  // namespace cspd
