#include "process/certificate_check.hpp"

#include "process/config.hpp"
#include "process/privileges.hpp"
#include "tls/certificate_folder.hpp"

#include <chrono>
#include <filesystem>
#include <stdexcept>

namespace cspd {

void check_certificates(const Config& config) {
    if (config.certs_dir.empty()) return;
    if (!std::filesystem::is_directory(config.certs_dir))
        throw std::runtime_error("certificates folder " + config.certs_dir.string() + " is not a folder");
    if (!config.tls_port || config.tls_self_signed) return;  // a stand-in serves until one does
    CertificateFolder folder(config.certs_dir, key_outsider(config));
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
    folder.rescan(now.count());
    if (std::string why = folder.why_none_serves(); !why.empty())
        throw std::runtime_error(why + "\nHTTPS needs one to start (--tls-self-signed serves a stand-in until one does)");
}

}  // namespace cspd
