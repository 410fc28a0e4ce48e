#include "handler/kept_versions.hpp"

#include "handler/loader.hpp"
#include "handler/version.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace cspd {
namespace fs = std::filesystem;

namespace {
std::string id_of(const HandlerVersion& version) {
    char text[64];
    std::snprintf(text, sizeof text, ".%016" PRIx64 ".%" PRIu64, version.file().content_hash, version.file().size);
    return version.name() + text;
}

/// A unique name beside `target` to write into before renaming over it.
fs::path scratch_beside(const fs::path& target) {
    static unsigned counter = 0;
    return target.parent_path() /
           ("." + target.filename().string() + "." + std::to_string(::getpid()) + "." + std::to_string(++counter));
}

bool write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    return static_cast<bool>(out.flush());
}
}  // namespace

KeptVersions::KeptVersions(fs::path folder) : folder_(std::move(folder)) {
    if (folder_.empty()) return;
    std::error_code ec;
    fs::create_directories(folder_ / "versions", ec);
    if (ec) {
        spdlog::error("cannot keep handler versions in {}: {}; a restarted worker serves only what is on disk",
                      folder_.string(), ec.message());
        folder_.clear();
    }
}

void KeptVersions::keep(const HandlerVersion& version, const PreparedVersion& prepared) const {
    if (!enabled() || prepared.copy().empty()) return;
    const fs::path target = folder_ / "versions" / id_of(version);
    std::error_code ec;
    if (fs::exists(target, ec)) {
        // Another worker kept it: marked young again, so that the master's sweep leaves it be
        // until the record naming it is written.
        fs::last_write_time(target, fs::file_time_type::clock::now(), ec);
        return;
    }
    const fs::path scratch = scratch_beside(target);
    fs::create_directory(scratch, ec);
    const fs::path library = scratch / (version.name() + ".so");
    // A hard link when the private copy is on the same file system (usually: both under TMPDIR).
    if (!ec && ::link(prepared.copy().c_str(), library.c_str()) != 0) fs::copy_file(prepared.copy(), library, ec);
    if (!ec && version.reads_config() && prepared.config().config) {
        const HandlerConfig& config = *prepared.config().config;
        if (!write_file(scratch / config.file_name(), config.text())) ec = std::make_error_code(std::errc::io_error);
    }
    if (!ec) fs::rename(scratch, target, ec);  // whole, or not at all; fails if another worker won
    if (ec) {
        std::error_code ignored;
        fs::remove_all(scratch, ignored);
        if (!fs::exists(target, ignored))
            spdlog::warn("handler {}: cannot keep a copy of {}: {}", version.name(), version.describe(), ec.message());
    }
}

void KeptVersions::set_serving(const std::string& name, const HandlerVersion* version) const {
    write_record(name, kServing, version);
}

void KeptVersions::set_good(const std::string& name, const HandlerVersion* version) const {
    write_record(name, kGood, version);
}

void KeptVersions::write_record(const std::string& name, const char* record, const HandlerVersion* version) const {
    if (!enabled()) return;
    const fs::path path = folder_ / (name + record);
    std::error_code ec;
    if (!version) {
        fs::remove(path, ec);
        return;
    }
    const fs::path scratch = scratch_beside(path);
    if (write_file(scratch, id_of(*version))) fs::rename(scratch, path, ec);
    if (ec) fs::remove(scratch, ec);
}

std::optional<KeptVersion> KeptVersions::read(const fs::path& folder, const std::string& name, const char* record) {
    if (folder.empty()) return std::nullopt;
    std::ifstream in(folder / (name + record));
    std::string id;
    if (!in || !std::getline(in, id)) return std::nullopt;
    // NAME.HASH.SIZE
    const std::size_t size_dot = id.rfind('.');
    const std::size_t hash_dot = size_dot == std::string::npos ? size_dot : id.rfind('.', size_dot - 1);
    if (hash_dot == std::string::npos || id.substr(0, hash_dot) != name) return std::nullopt;
    KeptVersion kept;
    kept.id = id;
    kept.config_folder = folder / "versions" / id;
    kept.library = kept.config_folder / (name + ".so");
    try {
        kept.content_hash = std::stoull(id.substr(hash_dot + 1, size_dot - hash_dot - 1), nullptr, 16);
        kept.size = std::stoull(id.substr(size_dot + 1));
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::error_code ec;
    if (!fs::is_regular_file(kept.library, ec)) return std::nullopt;
    return kept;
}

std::size_t KeptVersions::sweep(const fs::path& folder, std::chrono::seconds age) {
    std::set<std::string> named;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string file = it->path().filename().string();
        if (file.starts_with(".") || !(file.ends_with(kServing) || file.ends_with(kGood))) continue;
        std::ifstream in(it->path());
        std::string id;
        if (std::getline(in, id)) named.insert(id);
    }
    std::size_t removed = 0;
    const auto now = fs::file_time_type::clock::now();
    for (fs::directory_iterator it(folder / "versions", ec), end; !ec && it != end; it.increment(ec)) {
        if (named.contains(it->path().filename().string())) continue;
        std::error_code stat_ec;
        const auto written = fs::last_write_time(it->path(), stat_ec);
        if (stat_ec || now - written < age) continue;  // may be about to be named
        std::error_code ignored;
        if (fs::remove_all(it->path(), ignored) != static_cast<std::uintmax_t>(-1)) ++removed;
    }
    return removed;
}

}  // namespace cspd
