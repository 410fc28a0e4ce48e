#include "process/certificate_watch.hpp"

#include "serving/event_loop.hpp"
#include "tls/certificate.hpp"
#include "tls/key_client.hpp"
#include "tls/proxy_key.hpp"
#include "tls/tls_contexts.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>

namespace cspd {
namespace {
using namespace std::chrono_literals;
// Twice a second: a changed file serves new handshakes within a second.
constexpr auto kAskEvery = 500ms;
constexpr int kListTimeoutMs = 2000;
}  // namespace

CertificateWatch::CertificateWatch(boost::asio::io_context& control,
                                   const std::vector<std::unique_ptr<EventLoop>>& loops, TlsStatusBoard& board,
                                   bool http2)
    : loops_(loops), timer_(control), board_(board), http2_(http2) {}

void CertificateWatch::start() {
    ask();
    look_again();
}

void CertificateWatch::stop() { timer_.cancel(); }

void CertificateWatch::look_again() {
    timer_.expires_after(kAskEvery);
    timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        ask();
        look_again();
    });
}

void CertificateWatch::ask() {
    const auto answer = KeyClient::ask(key_protocol::Op::list, generation_, {}, kListTimeoutMs);
    if (!answer) {
        if (!unreachable_logged_)
            spdlog::warn("HTTPS: the key process does not answer; the certificates served before keep serving");
        unreachable_logged_ = true;
        return;
    }
    unreachable_logged_ = false;
    if (answer->kind == static_cast<std::uint8_t>(key_protocol::Answer::unchanged)) return;
    if (answer->kind != static_cast<std::uint8_t>(key_protocol::Answer::ok)) return;
    if (rebuild(answer->payload)) generation_ = answer->id;
}

bool CertificateWatch::rebuild(const std::string& text) {
    const nlohmann::json listing = nlohmann::json::parse(text, nullptr, false);
    if (listing.is_discarded()) {
        spdlog::error("HTTPS: the key process's listing does not parse");
        return false;
    }
    std::vector<std::shared_ptr<const Certificate>> certificates;
    std::map<std::uint64_t, std::shared_ptr<const Certificate>> by_key;
    std::size_t default_index = 0;
    for (const auto& item : listing.value("certificates", nlohmann::json::array())) {
        const std::uint64_t key = item.value("key", std::uint64_t(0));
        std::shared_ptr<Certificate> certificate = describe_chain(item.value("file", ""), item.value("chain", ""));
        if (certificate) certificate->key = make_proxy_key(certificate->leaf.get(), key);
        if (!certificate || !certificate->key) {
            spdlog::error("HTTPS: certificate {} cannot be served here (unreadable chain or unsupported key type)",
                          item.value("file", ""));
            continue;
        }
        by_key[key] = certificate;
        if (item.value("default", false)) default_index = certificates.size();
        certificates.push_back(std::move(certificate));
    }
    std::vector<CertificateState> states;
    for (const auto& entry : listing.value("entries", nlohmann::json::array())) {
        CertificateState state{entry.value("name", ""), entry.value("file", ""), false, entry.value("refusal", ""),
                               entry.value("refused_at", std::int64_t(0)), {}, 0, {}};
        const auto serving = by_key.find(entry.value("serving", std::uint64_t(0)));
        if (serving != by_key.end()) {
            state.serving = true;
            state.names = serving->second->dns_names;
            for (const auto& ip : serving->second->ip_names) state.names.push_back(ip);
            state.not_after = serving->second->not_after;
            state.sha256 = serving->second->sha256;
        }
        states.push_back(std::move(state));
    }
    if (states.empty() && !certificates.empty()) {  // --tls-self-signed alone
        const Certificate& only = *certificates.front();
        CertificateState state{"self-signed", only.file, true, {}, 0, only.dns_names, only.not_after, only.sha256};
        for (const auto& ip : only.ip_names) state.names.push_back(ip);
        states.push_back(std::move(state));
    }
    board_.publish(std::move(states));

    std::shared_ptr<const TlsContexts> contexts;
    if (certificates.empty()) {
        if (!served_nothing_logged_)
            spdlog::error("HTTPS: no certificate serves (none usable in --certs); HTTPS connections are closed until "
                          "one does");
        served_nothing_logged_ = true;
    } else {
        served_nothing_logged_ = false;
        try {
            contexts = TlsContexts::build(std::move(certificates), default_index, http2_);
        } catch (const std::exception& e) {
            spdlog::error("HTTPS: {}; the certificates served before keep serving", e.what());
            return false;
        }
    }
    for (const auto& loop : loops_) loop->use_certificates(contexts);
    return true;
}

}  // namespace cspd
