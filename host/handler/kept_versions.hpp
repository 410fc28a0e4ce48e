// What the server keeps of its handlers across worker restarts, in a folder its master owns
// (private, under TMPDIR): a copy of each version that was loaded, under its name, hash and
// size, with the configuration it was loaded with; and, per name, which kept version is
// serving and which is the last good one -- the version it replaced, which a rollback
// returns to until the newer one has served cleanly for --quarantine-window. A worker that
// starts while the file on disk is refused or quarantined serves a kept version instead of
// nothing; the master reads the last good one when it quarantines.
//
// Every worker writes the same records (each renames a whole file into place): they agree once
// they have all loaded the same version. The master removes copies no record names.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cspd {

class HandlerVersion;
class PreparedVersion;

/// A kept copy: the library and the folder its configuration is in, loadable as it was.
struct KeptVersion {
    std::string id;  ///< "NAME.HASH.SIZE"
    std::filesystem::path library, config_folder;
    std::uint64_t size = 0, content_hash = 0;
};

class KeptVersions {
public:
    /// `folder`: the server's; empty keeps nothing (a single process: no restart to survive).
    explicit KeptVersions(std::filesystem::path folder = {});

    bool enabled() const { return !folder_.empty(); }

    /// Keeps a copy of `version`, loaded from `prepared` (whose private copy is still on disk).
    void keep(const HandlerVersion& version, const PreparedVersion& prepared) const;
    /// Records that `name` now serves `version` (null: nothing, its file is gone).
    void set_serving(const std::string& name, const HandlerVersion* version) const;
    /// Records the version a rollback of `name` returns to (null: none any more).
    void set_good(const std::string& name, const HandlerVersion* version) const;

    std::optional<KeptVersion> serving(const std::string& name) const { return read(folder_, name, kServing); }
    std::optional<KeptVersion> good(const std::string& name) const { return read(folder_, name, kGood); }

    /// The last good version of `name` kept in `folder`, for the master.
    static std::optional<KeptVersion> good_in(const std::filesystem::path& folder, const std::string& name) {
        return read(folder, name, kGood);
    }
    static std::optional<KeptVersion> serving_in(const std::filesystem::path& folder, const std::string& name) {
        return read(folder, name, kServing);
    }
    /// Removes the copies in `folder` no record names that are older than `age`; how many.
    static std::size_t sweep(const std::filesystem::path& folder, std::chrono::seconds age);

private:
    static constexpr const char* kServing = ".serving";
    static constexpr const char* kGood = ".good";
    static std::optional<KeptVersion> read(const std::filesystem::path& folder, const std::string& name,
                                           const char* record);
    void write_record(const std::string& name, const char* record, const HandlerVersion* version) const;

    std::filesystem::path folder_;
};

}  // namespace cspd
