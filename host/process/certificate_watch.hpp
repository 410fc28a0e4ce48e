// A worker's side of --certs: looks at the folder twice a second (on the control thread) and,
// when what serves changed, builds new TLS contexts and hands them to every loop, so that new
// handshakes use a new or changed certificate within a second while open connections keep
// theirs. With --tls-self-signed, the self-signed certificate serves while the folder has none.
#pragma once

#include "tls/certificate_folder.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace cspd {

struct Config;
class EventLoop;
class TlsContexts;

class CertificateWatch {
public:
    /// `self_signed`: the certificate to serve while the folder has none, if any.
    CertificateWatch(boost::asio::io_context& control, const Config& config,
                     const std::vector<std::unique_ptr<EventLoop>>& loops,
                     std::shared_ptr<const Certificate> self_signed);

    /// Reads the folder and gives the loops their first contexts (before they run), then keeps
    /// looking.
    void start();
    void stop();

    /// What the folder holds now, for /-/status.
    const std::vector<CertificateFolder::Entry>& entries() const;

private:
    void publish();
    void look_again();

    const std::vector<std::unique_ptr<EventLoop>>& loops_;
    std::optional<CertificateFolder> folder_;
    std::shared_ptr<const Certificate> self_signed_;
    boost::asio::steady_timer timer_;
    bool served_nothing_logged_ = false;
};

/// The self-signed certificate this process serves with --tls-self-signed: the master's (it made
/// the file in `server_folder`), else one made now. Null without the flag.
std::shared_ptr<const Certificate> self_signed_certificate(const Config& config);

/// The master's part: makes the self-signed certificate once for every worker, in `server_folder`,
/// and logs its fingerprint. Nothing without --tls-self-signed.
void make_self_signed_for_workers(const Config& config);

}  // namespace cspd
