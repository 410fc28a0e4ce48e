#include "tls/certificate_folder.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace cspd {
namespace {
struct Found {
    std::filesystem::path pem, crt, key;
};

bool stamp_of(const std::filesystem::path& path, std::int64_t& mtime_ns, std::uintmax_t& size, std::uintmax_t& inode,
              unsigned& mode) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    size = static_cast<std::uintmax_t>(st.st_size);
    inode = st.st_ino;
    mode = static_cast<unsigned>(st.st_mode & 07777);
    return true;
}
/// Why the file holding a private key must not serve, or empty: any account can read it, or the
/// one handler code runs as can (its owner, or in its group), which would make the key process
/// pointless. Judged on the file itself, through links (as sshd judges a key file).
std::string key_exposure(const std::filesystem::path& file, const std::optional<KeyOutsider>& outsider) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return {};
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    const std::string key = "its private key " + file.filename().string();
    if (st.st_mode & (S_IROTH | S_IWOTH))
        return key + " can be read by any account (mode " + mode + "), handler code included: chmod 600 " +
               file.string();
    if (!outsider) return {};
    if (st.st_uid == outsider->uid && (st.st_mode & (S_IRUSR | S_IWUSR)))
        return key + " belongs to " + outsider->name + ", the account handler code runs as (mode " + mode +
               "): chown root " + file.string();
    const bool in_group =
        std::find(outsider->groups.begin(), outsider->groups.end(), st.st_gid) != outsider->groups.end();
    if (in_group && (st.st_mode & (S_IRGRP | S_IWGRP)))
        return key + " can be read through its group by " + outsider->name +
               ", the account handler code runs as (mode " + mode + "): chmod 600 " + file.string();
    return {};
}
/// certbot's layout: a folder per name (live/NAME/) holding fullchain.pem and privkey.pem (links
/// into ../../archive/, followed), beside cert.pem and chain.pem, which add nothing to them.
bool certbot_pair(const std::filesystem::path& folder, Found& into) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(folder / "fullchain.pem", ec) ||
        !std::filesystem::is_regular_file(folder / "privkey.pem", ec))
        return false;
    into.crt = folder / "fullchain.pem";
    into.key = folder / "privkey.pem";
    return true;
}

bool certbot_file(const std::string& file) {
    return file == "fullchain.pem" || file == "privkey.pem" || file == "cert.pem" || file == "chain.pem";
}
}  // namespace

bool CertificateFolder::rescan(std::int64_t now) {
    std::map<std::string, Found> found;  // by NAME, so entries come out sorted
    // --certs may be certbot's live/NAME/ itself: its certificate takes the folder's name.
    Found here;
    const bool certbot_folder = certbot_pair(dir_, here);
    if (certbot_folder) {
        std::string name = dir_.filename().string();
        if (name.empty()) name = dir_.parent_path().filename().string();  // "live/site/"
        found[name.empty() ? "default" : name] = here;
    }
    std::error_code ec;
    for (const auto& item : std::filesystem::directory_iterator(dir_, ec)) {
        const std::filesystem::path& path = item.path();
        const std::string file = path.filename().string();
        if (file.empty() || file.front() == '.') continue;
        if (item.is_directory(ec)) {
            // Or certbot's live/: a folder per name.
            if (Found pair; certbot_pair(path, pair)) found[file] = pair;
            continue;
        }
        if (!item.is_regular_file(ec) || (certbot_folder && certbot_file(file))) continue;
        const std::string ext = path.extension().string();
        const std::string stem = path.stem().string();
        if (ext == ".pem") found[stem].pem = path;
        else if (ext == ".crt") found[stem].crt = path;
        else if (ext == ".key") found[stem].key = path;
    }
    if (ec) spdlog::warn("certificates: cannot read {}: {}", dir_.string(), ec.message());

    bool changed = false;
    unpaired_.clear();
    std::vector<Tracked> next;
    for (auto& [found_name, files] : found) {
        const std::string& name = found_name;  // a plain reference: lambdas below may capture it
        // NAME.pem wins over a NAME.crt + NAME.key pair beside it; a lone .crt or .key waits for its partner.
        const bool single = !files.pem.empty();
        if (!single && (files.crt.empty() || files.key.empty())) {
            unpaired_.push_back(files.crt.empty() ? name + ".key: no " + name + ".crt beside it"
                                                  : name + ".crt: no " + name + ".key beside it");
            continue;
        }
        const std::filesystem::path& chain = single ? files.pem : files.crt;
        const std::filesystem::path key = single ? std::filesystem::path() : files.key;

        Tracked tracked;
        const auto old = std::find_if(tracked_.begin(), tracked_.end(), [&](const Tracked& t) { return t.entry.name == name; });
        if (old != tracked_.end()) tracked = std::move(*old);
        tracked.entry.name = name;
        // As the folder's own path names it: NAME/fullchain.pem+NAME/privkey.pem for certbot's live/.
        const auto shown = [&](const std::filesystem::path& path) { return path.lexically_relative(dir_).string(); };
        tracked.entry.file = single ? shown(chain) : shown(chain) + "+" + shown(key);
        Stamp pem_stamp, key_stamp;
        if (!stamp_of(chain, pem_stamp.mtime_ns, pem_stamp.size, pem_stamp.inode, pem_stamp.mode) ||
            (!single && !stamp_of(key, key_stamp.mtime_ns, key_stamp.size, key_stamp.inode, key_stamp.mode)))
            continue;  // gone since the listing
        const bool fresh = old == tracked_.end() || !(tracked.pem == pem_stamp) || !(tracked.key == key_stamp);
        if (fresh) {
            tracked.pem = pem_stamp;
            tracked.key = key_stamp;
            LoadedCertificate loaded;
            if (std::string exposed = key_exposure(single ? chain : key, outsider_); !exposed.empty())
                loaded.refusal = std::move(exposed);
            else
                loaded = load_certificate(chain, key, now);
            if (loaded.certificate) {
                const bool same = tracked.entry.serving && tracked.entry.serving->sha256 == loaded.certificate->sha256 &&
                                  tracked.entry.refusal.empty();
                tracked.entry.refusal.clear();
                if (!same) {
                    spdlog::info("certificate {}: serving {} (until {}, SHA-256 {})", tracked.entry.file,
                                 fmt::join(loaded.certificate->dns_names, ", "), utc_text(loaded.certificate->not_after),
                                 loaded.certificate->sha256);
                    changed = true;
                }
                tracked.entry.serving = std::move(loaded.certificate);
            } else {
                tracked.entry.refusal = std::move(loaded.refusal);
                tracked.entry.refused_at = now;
                spdlog::warn("certificate {}: refused: {}{}", tracked.entry.file, tracked.entry.refusal,
                             tracked.entry.serving ? "; the previous one keeps serving" : "");
            }
        }
        next.push_back(std::move(tracked));
    }
    for (const Tracked& gone : tracked_)
        if (std::none_of(next.begin(), next.end(), [&](const Tracked& t) { return t.entry.name == gone.entry.name; })) {
            if (gone.entry.serving) {
                spdlog::info("certificate {}: removed; no longer served", gone.entry.file);
                changed = true;
            }
        }
    tracked_ = std::move(next);
    entries_.clear();
    for (const Tracked& t : tracked_) entries_.push_back(t.entry);
    return changed;
}

std::string CertificateFolder::why_none_serves() const {
    for (const Entry& entry : entries_)
        if (entry.serving) return {};
    std::string why = "no certificate in " + dir_.string() + " can serve";
    if (entries_.empty() && unpaired_.empty())
        return why + ": it holds no NAME.pem (key and chain), no NAME.crt with its NAME.key, and no certbot "
                     "fullchain.pem with its privkey.pem (in live/NAME/)";
    for (const Entry& entry : entries_) why += "\n  " + entry.file + ": " + entry.refusal;
    for (const std::string& lone : unpaired_) why += "\n  " + lone;
    return why;
}

std::vector<std::shared_ptr<const Certificate>> CertificateFolder::serving(std::size_t& default_index) const {
    std::vector<std::shared_ptr<const Certificate>> certificates;
    default_index = 0;
    for (const Entry& entry : entries_) {
        if (!entry.serving) continue;
        if (entry.name == "default") default_index = certificates.size();
        certificates.push_back(entry.serving);
    }
    return certificates;
}

}  // namespace cspd
