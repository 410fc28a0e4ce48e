// What /-/status, the dashboard and /metrics say of HTTPS certificates: the worker's view of
// the certificates folder as the key process judged it, published by its control thread and
// read by whichever loop renders a status (rarely: under a lock).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cspd {

struct CertificateState {
    std::string name;              ///< NAME of NAME.pem / NAME.crt + NAME.key
    std::string file;
    bool serving = false;
    std::string refusal;           ///< why its current content is not used (empty: it is)
    std::int64_t refused_at = 0;   ///< Unix seconds
    std::vector<std::string> names;  ///< of the certificate that serves from it
    std::int64_t not_after = 0;      ///< Unix seconds
    std::string sha256;
};

class TlsStatusBoard {
public:
    void publish(std::vector<CertificateState> states) {
        std::lock_guard lock(mutex_);
        states_ = std::move(states);
    }
    std::vector<CertificateState> certificates() const {
        std::lock_guard lock(mutex_);
        return states_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<CertificateState> states_;
};

}  // namespace cspd
