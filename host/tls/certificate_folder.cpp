#include "tls/certificate_folder.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <map>

namespace cspd {
namespace {
struct Found {
    std::filesystem::path pem, crt, key;
};

bool stamp_of(const std::filesystem::path& path, std::int64_t& mtime_ns, std::uintmax_t& size, std::uintmax_t& inode) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    size = static_cast<std::uintmax_t>(st.st_size);
    inode = st.st_ino;
    return true;
}
}  // namespace

bool CertificateFolder::rescan(std::int64_t now) {
    std::map<std::string, Found> found;  // by NAME, so entries come out sorted
    std::error_code ec;
    for (const auto& item : std::filesystem::directory_iterator(dir_, ec)) {
        const std::filesystem::path& path = item.path();
        const std::string file = path.filename().string();
        if (file.empty() || file.front() == '.' || !item.is_regular_file(ec)) continue;
        const std::string ext = path.extension().string();
        const std::string stem = path.stem().string();
        if (ext == ".pem") found[stem].pem = path;
        else if (ext == ".crt") found[stem].crt = path;
        else if (ext == ".key") found[stem].key = path;
    }
    if (ec) spdlog::warn("certificates: cannot read {}: {}", dir_.string(), ec.message());

    bool changed = false;
    std::vector<Tracked> next;
    for (auto& [found_name, files] : found) {
        const std::string& name = found_name;  // a plain reference: lambdas below may capture it
        // NAME.pem wins over a NAME.crt + NAME.key pair beside it; a lone .crt or .key waits for its partner.
        const bool single = !files.pem.empty();
        if (!single && (files.crt.empty() || files.key.empty())) continue;
        const std::filesystem::path& chain = single ? files.pem : files.crt;
        const std::filesystem::path key = single ? std::filesystem::path() : files.key;

        Tracked tracked;
        const auto old = std::find_if(tracked_.begin(), tracked_.end(), [&](const Tracked& t) { return t.entry.name == name; });
        if (old != tracked_.end()) tracked = std::move(*old);
        tracked.entry.name = name;
        tracked.entry.file = single ? chain.filename().string() : chain.filename().string() + "+" + key.filename().string();
        Stamp pem_stamp, key_stamp;
        if (!stamp_of(chain, pem_stamp.mtime_ns, pem_stamp.size, pem_stamp.inode) ||
            (!single && !stamp_of(key, key_stamp.mtime_ns, key_stamp.size, key_stamp.inode)))
            continue;  // gone since the listing
        const bool fresh = old == tracked_.end() || !(tracked.pem == pem_stamp) || !(tracked.key == key_stamp);
        if (fresh) {
            tracked.pem = pem_stamp;
            tracked.key = key_stamp;
            LoadedCertificate loaded = load_certificate(chain, key, now);
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
