#include "process/certificate_watch.hpp"

#include "common/clocks.hpp"
#include "common/unique_fd.hpp"
#include "process/config.hpp"
#include "serving/event_loop.hpp"
#include "tls/self_signed.hpp"
#include "tls/tls_contexts.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace cspd {
namespace {
using namespace std::chrono_literals;
// Twice a second: a changed file serves new handshakes within a second.
constexpr auto kLookEvery = 500ms;
constexpr const char* kSelfSignedFile = "tls-self-signed.pem";

std::int64_t unix_now_s() { return static_cast<std::int64_t>(unix_now_ms() / 1000); }

const std::vector<CertificateFolder::Entry> kNoEntries;
}  // namespace

CertificateWatch::CertificateWatch(boost::asio::io_context& control, const Config& config,
                                   const std::vector<std::unique_ptr<EventLoop>>& loops,
                                   std::shared_ptr<const Certificate> self_signed)
    : loops_(loops), self_signed_(std::move(self_signed)), timer_(control) {
    if (!config.certs_dir.empty()) folder_.emplace(config.certs_dir);
}

const std::vector<CertificateFolder::Entry>& CertificateWatch::entries() const {
    return folder_ ? folder_->entries() : kNoEntries;
}

void CertificateWatch::start() {
    if (folder_) folder_->rescan(unix_now_s());
    publish();
    look_again();
}

void CertificateWatch::stop() { timer_.cancel(); }

void CertificateWatch::look_again() {
    if (!folder_) return;  // only the self-signed one: nothing changes
    timer_.expires_after(kLookEvery);
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        if (folder_->rescan(unix_now_s())) publish();
        look_again();
    });
}

void CertificateWatch::publish() {
    std::size_t default_index = 0;
    std::vector<std::shared_ptr<const Certificate>> certificates;
    if (folder_) certificates = folder_->serving(default_index);
    if (certificates.empty() && self_signed_) certificates.push_back(self_signed_);
    std::shared_ptr<const TlsContexts> contexts;
    if (certificates.empty()) {
        if (!served_nothing_logged_)
            spdlog::error("HTTPS: no certificate serves (none usable in --certs); HTTPS connections are closed until "
                          "one does");
        served_nothing_logged_ = true;
    } else {
        served_nothing_logged_ = false;
        try {
            contexts = TlsContexts::build(std::move(certificates), default_index);
        } catch (const std::exception& e) {
            spdlog::error("HTTPS: {}; the certificates served before keep serving", e.what());
            return;
        }
    }
    for (const auto& loop : loops_) loop->use_certificates(contexts);
}

std::shared_ptr<const Certificate> self_signed_certificate(const Config& config) {
    if (!config.tls_self_signed) return nullptr;
    std::string pem;
    const std::filesystem::path made = config.server_folder.empty() ? std::filesystem::path()
                                                                    : config.server_folder / kSelfSignedFile;
    if (!made.empty() && std::filesystem::exists(made)) {
        std::ifstream in(made, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        pem = std::move(text).str();
    } else {
        pem = make_self_signed_pem();
    }
    LoadedCertificate loaded = parse_certificate(kSelfSignedFile, pem, pem, unix_now_s());
    OPENSSL_cleanse(pem.data(), pem.size());
    if (!loaded.certificate) throw std::runtime_error("self-signed certificate: " + loaded.refusal);
    if (made.empty() || !std::filesystem::exists(made))
        spdlog::info("HTTPS: self-signed certificate for localhost, 127.0.0.1 and ::1, SHA-256 {}",
                     loaded.certificate->sha256);
    return loaded.certificate;
}

void make_self_signed_for_workers(const Config& config) {
    if (!config.tls_self_signed) return;
    std::string pem = make_self_signed_pem();
    const std::filesystem::path path = config.server_folder / kSelfSignedFile;
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd || ::write(fd.get(), pem.data(), pem.size()) != static_cast<ssize_t>(pem.size()))
        throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
    LoadedCertificate loaded = parse_certificate(kSelfSignedFile, pem, pem, unix_now_s());
    OPENSSL_cleanse(pem.data(), pem.size());
    if (loaded.certificate)
        spdlog::info("HTTPS: self-signed certificate for localhost, 127.0.0.1 and ::1 (served while --certs has "
                     "none), SHA-256 {}",
                     loaded.certificate->sha256);
}

}  // namespace cspd
