#include "process/vetting_verdicts.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace cspd {

VettingVerdicts::VettingVerdicts(const std::filesystem::path& server_folder) {
    if (server_folder.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(server_folder / "verdicts", ec);
    if (!ec) folder_ = server_folder / "verdicts";
}

std::optional<GateVerdict> VettingVerdicts::find(const std::string& id) const {
    if (!enabled()) return std::nullopt;
    std::ifstream in(folder_ / id);
    std::string kind;
    if (!in || !std::getline(in, kind)) return std::nullopt;
    std::ostringstream reason;
    reason << in.rdbuf();
    if (kind == "pass") return GateVerdict{};
    if (kind == "fenced" || kind == "refused") return GateVerdict{false, kind == "fenced", reason.str()};
    return std::nullopt;
}

void VettingVerdicts::record(const std::string& id, const GateVerdict& verdict) const {
    if (!enabled()) return;
    const std::filesystem::path scratch = folder_ / ("." + id + "." + std::to_string(::getpid()));
    {
        std::ofstream out(scratch, std::ios::trunc);
        out << (verdict.pass ? "pass" : verdict.fenced ? "fenced" : "refused") << '\n' << verdict.reason;
        if (!out.flush()) return;
    }
    std::error_code ec;
    std::filesystem::rename(scratch, folder_ / id, ec);
    if (ec) std::filesystem::remove(scratch, ec);
}

std::optional<UniqueFd> VettingVerdicts::claim(const std::string& id) const {
    UniqueFd lock(::open((folder_ / (id + ".lock")).c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock) return UniqueFd();  // cannot share: vet alone
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return errno == EWOULDBLOCK ? std::nullopt : std::optional(UniqueFd());
    return lock;
}

}  // namespace cspd

namespace cspd {

std::size_t VettingVerdicts::sweep(const std::filesystem::path& server_folder, std::chrono::seconds age) {
    std::size_t removed = 0;
    const auto now = std::filesystem::file_time_type::clock::now();
    std::error_code ec;
    for (std::filesystem::directory_iterator it(server_folder / "verdicts", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::filesystem::path& path = it->path();
        std::error_code stat_ec;
        if (now - std::filesystem::last_write_time(path, stat_ec) < age || stat_ec) continue;
        if (path.extension() == ".lock") {
            // Only a lock nobody holds: removed while held, the next claimer would make a second one.
            const UniqueFd lock(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
            if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
        } else {
            std::ifstream in(path);
            std::string kind;
            if (std::getline(in, kind) && kind == "fenced") continue;
        }
        if (std::filesystem::remove(path, stat_ec)) ++removed;
    }
    return removed;
}

}  // namespace cspd
