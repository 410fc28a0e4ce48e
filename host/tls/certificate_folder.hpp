// The --certs folder as certificates: NAME.pem (key and chain in one file, so one rename
// replaces both), NAME.crt + NAME.key pairs (as lego writes them), and certbot's layout as it is:
// --certs pointing at live/ (a folder NAME/ per certificate) or at one live/NAME/, each with
// fullchain.pem + privkey.pem, links into ../../archive/ that are followed. rescan()
// looks at the files again and reloads the ones whose stamp changed; a file that cannot
// serve is refused with its reason, and the last good certificate loaded from it keeps
// serving, so a half-written or mismatched update is never an outage. Files whose names
// begin with a dot are ignored (editors' and installers' temporaries).
#pragma once

#include "tls/certificate.hpp"

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cspd {

/// The account handler code runs as: a private key it could read (as owner, through a group
/// or as anyone) is refused, or the key process would be pointless.
struct KeyOutsider {
    std::string name;
    uid_t uid = 0;
    std::vector<gid_t> groups;  ///< its own and the supplementary ones
};

class CertificateFolder {
public:
    struct Entry {
        std::string name;                                ///< NAME: "default" answers clients without SNI
        std::string file;                                ///< "NAME.pem" or "NAME.crt+NAME.key"
        std::shared_ptr<const Certificate> serving;      ///< the last good one, if any
        std::string refusal;                             ///< why the current file is not used (empty: it is)
        std::int64_t refused_at = 0;                     ///< Unix seconds
    };

    /// `outsider`: the account handler code runs as, if not root (any account is kept out anyway).
    explicit CertificateFolder(std::filesystem::path dir, std::optional<KeyOutsider> outsider = {})
        : dir_(std::move(dir)), outsider_(std::move(outsider)) {}

    /// Looks at the folder again (`now`: Unix seconds, for validity). True when what serves
    /// changed. Refusals are logged as they happen.
    bool rescan(std::int64_t now);

    /// By NAME.
    const std::vector<Entry>& entries() const { return entries_; }
    /// Every certificate that serves, by NAME; `default_index` is NAME "default"'s, else 0.
    std::vector<std::shared_ptr<const Certificate>> serving(std::size_t& default_index) const;
    /// Why none of the files seen by the last rescan serves, file by file; empty if one does.
    std::string why_none_serves() const;

private:
    struct Stamp {
        std::int64_t mtime_ns = 0;
        std::uintmax_t size = 0;
        std::uintmax_t inode = 0;
        unsigned mode = 0;  // a chmod is a change: a key refused for its mode serves once fixed
        bool operator==(const Stamp&) const = default;
    };
    struct Tracked {
        Entry entry;
        Stamp pem, key;  // `key` unused for a NAME.pem
    };

    std::filesystem::path dir_;
    std::optional<KeyOutsider> outsider_;
    std::vector<Tracked> tracked_;
    std::vector<Entry> entries_;
    std::vector<std::string> unpaired_;  // NAME.crt or NAME.key found without its partner
};

}  // namespace cspd
