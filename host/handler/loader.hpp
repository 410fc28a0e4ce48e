// Turns a handler file into a HandlerVersion: read it whole, check it is a
// complete ELF image, load a private copy (never the user's file: overwriting a
// mapped library crashes the process, and dlopen returns its cached handle for
// a path or inode it already has), check the ABI, run init.
#pragma once

#include "common/unique_fd.hpp"
#include "handler/handler_config.hpp"
#include "handler/private_folders.hpp"
#include "handler/version.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace cspd {

enum class LoadError {
    none,
    unreadable,  ///< cannot open, not a regular file
    untrusted,   ///< writable by someone the server does not trust (see strict modes)
    too_large,
    changing,      ///< the file changed while being read: try again shortly
    incomplete,    ///< looks cut short: maybe still being written
    not_loadable,  ///< not an ELF shared object for this machine
    dlopen_failed,
    no_entry_point,  ///< no csp_handler symbol
    wrong_abi,
    bad_descriptor,
    init_failed,  ///< init returned nonzero or threw
    bad_config,   ///< NAME.conf / NAME.json cannot be read or parsed
    io_error,     ///< the private copy could not be written
    gated,        ///< the load gate said no (fenced, or it failed when tried elsewhere)
};

struct LoadResult {
    std::shared_ptr<HandlerVersion> version;  ///< set on success
    LoadError error = LoadError::none;
    std::string reason;  ///< why not, for the log and /-/status
};

/// A file read, checked and copied to a private name, not yet loaded: what a load gate is shown
/// before anything of it runs here. Removes its copy unless opened.
class PreparedVersion {
public:
    PreparedVersion() = default;
    PreparedVersion(PreparedVersion&& other) noexcept;
    PreparedVersion& operator=(PreparedVersion&& other) noexcept;
    ~PreparedVersion();

    const std::string& name() const { return name_; }
    const std::filesystem::path& copy() const { return copy_; }
    /// Size and hash as quarantine and vetting key it (the configuration's text hashed in).
    const HandlerFileIdentity& identity() const { return identity_; }
    const std::filesystem::path& config_folder() const { return config_folder_; }
    /// NAME.conf or NAME.json as read (none, or an error, is possible).
    const HandlerConfig::Read& config() const { return config_; }

private:
    friend class HandlerLoader;
    std::string name_;
    std::filesystem::path copy_, config_folder_;
    HandlerFileIdentity identity_;
    std::uint64_t image_hash_ = 0;  // the library's bytes alone
    std::uint64_t sequence_ = 0;
    HandlerConfig::Read config_;  // read once: the text hashed is the text init sees
    bool owns_copy_ = true;       // false: the file itself, a copy somebody else made and removes
};

/// HandlerLoader's constructor for a vetting process: it loads the file it is given where it
/// lies (the asking worker's private copy, which nothing writes and nothing else has loaded),
/// makes no folder and writes no copy.
struct LoadInPlace {};

/// HandlerLoader's constructor for a serving process whose private folder is made already (its
/// sandbox names it before any handler loads): the copies go there, and the folder stays its owner's.
struct CopiesInto {
    std::filesystem::path folder;
};

class HandlerLoader {
public:
    /// Creates a private directory for the copies under `scratch_parent`; throws on failure.
    /// With `strict_modes`, refuses files that someone other than root or this user could have written.
    explicit HandlerLoader(const std::filesystem::path& scratch_parent, bool strict_modes = true);
    explicit HandlerLoader(LoadInPlace);
    explicit HandlerLoader(CopiesInto where, bool strict_modes = true);
    ~HandlerLoader();
    HandlerLoader(const HandlerLoader&) = delete;
    HandlerLoader& operator=(const HandlerLoader&) = delete;

    /// Told as loading enters each phase (load, init) and leaves it (none), for a process that
    /// reports them, or a master that times them.
    using PhaseObserver = std::function<void(HandlerPhase, const HandlerLabel&)>;
    void on_phase(PhaseObserver observer) { on_phase_ = std::move(observer); }

    /// What init is told of its process: CSP_VETTING as `index` in a vetting process.
    void set_worker(unsigned index, unsigned count) { worker_index_ = index, worker_count_ = count; }

    /// Loads `file` as handler `name`, with its configuration from `config_folder` (NAME.conf or
    /// NAME.json; empty: the file's own folder): prepare(), then open(). Blocking (file I/O, dlopen,
    /// init): not for an event loop.
    LoadResult load(const std::string& name, const std::filesystem::path& file,
                    const std::filesystem::path& config_folder = {});
    /// Reads `file` whole, checks it and writes its private copy into `out`; nothing of it runs.
    /// A result without error means `out` is ready to open (or to show a load gate).
    LoadResult prepare(const std::string& name, const std::filesystem::path& file,
                       const std::filesystem::path& config_folder, PreparedVersion& out);
    /// Loads a prepared version: dlopen, ABI check, init. Its copy stays on disk (to be kept, say)
    /// until `prepared` goes.
    LoadResult open(PreparedVersion& prepared);

    /// Which configuration file `name` has in `folder` now (its identity, hashed; 0: none), so a
    /// watcher sees a changed configuration as a new version.
    static std::uint64_t config_stamp(const std::filesystem::path& folder, const std::string& name);

    /// Why `file` must not be trusted (see the constructor), or empty; always empty without strict modes.
    std::string untrusted(const std::filesystem::path& file) const;

    /// A stand-in version that answers every request with 500 and `text` (--dev diagnostics).
    std::shared_ptr<HandlerVersion> diagnostics_version(const std::string& name, std::string text);
    /// A stand-in for a version the crash quarantine lists: it carries the file's identity (so the
    /// router answers 503 for it, or serves the version it replaced) and nothing of the file is
    /// opened or run. Called anyway, it answers 503.
    std::shared_ptr<HandlerVersion> quarantined_version(const std::string& name, const HandlerFileIdentity& file);

    /// Identity of a file on disk without loading it; nullopt-like false if it cannot be stat'ed.
    static bool identify(const std::filesystem::path& file, HandlerFileIdentity& out);

    /// Where private copies go (not for a LoadInPlace loader).
    const std::filesystem::path& scratch_dir() const { return copies_; }

private:
    std::optional<PrivateFolder> scratch_;  // the folder this loader made, if it made one
    std::filesystem::path copies_;          // where copies go; empty: LoadInPlace
    bool strict_modes_;
    std::uint64_t next_sequence_ = 1;
    PhaseObserver on_phase_;
    unsigned worker_index_ = 0, worker_count_ = 1;
};

}  // namespace cspd
