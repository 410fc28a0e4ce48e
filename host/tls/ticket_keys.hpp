// Session tickets any worker can open: the ticket keys live in a small memory segment the
// master (or a lone server) makes and rotates, and every worker maps read-only. The newest key
// encrypts new tickets; it and the two before it decrypt (a ticket made under an older one is
// still accepted, and the client gets a fresh one). Rotated hourly: a ticket stays usable for
// two hours at least and three at most, and its key is gone after that.
//
// Ticket keys are in every worker's memory, where handler code runs, as they are in any server
// whose workers resume sessions (h2o, nginx): what they protect (a session's resumption
// secret) passes through that worker's memory anyway. Rotation bounds what one leak opens.
#pragma once

#include "common/seqlock.hpp"
#include "common/unique_fd.hpp"

#include <openssl/ssl.h>

#include <cstdint>

namespace cspd {

struct TicketKey {
    unsigned char name[16];
    unsigned char aes[32];   ///< AES-256-CBC
    unsigned char hmac[32];  ///< HMAC-SHA256
};

struct TicketKeyRing {
    static constexpr int kKeys = 3;
    TicketKey keys[kKeys];  ///< [0] encrypts; all decrypt
    std::uint32_t count;
};

class TicketKeys {
public:
    /// How often the owner rotates, and how long a ticket says it lives.
    static constexpr int kRotateEverySeconds = 3600;
    static constexpr int kTicketLifetimeSeconds = 2 * kRotateEverySeconds;

    /// A new segment with one key, for this process and the workers it starts. Throws.
    static TicketKeys create();
    /// The segment at `fd` (the master's), read-only. Throws.
    static TicketKeys attach(int fd);

    TicketKeys(TicketKeys&& other) noexcept;
    TicketKeys& operator=(TicketKeys&&) = delete;
    ~TicketKeys();

    int fd() const { return fd_.get(); }
    /// A new key encrypts from now on (only the segment's maker may).
    void rotate();
    /// The keys as of now.
    TicketKeyRing current() const { return ring_->read(); }

    /// From now on every TLS context this process makes encrypts and opens tickets with this segment.
    void serve_tickets() const;
    /// What serve_tickets() asked for, for one context: nothing if it was not called.
    static void attach_to(SSL_CTX* ctx);

private:
    TicketKeys(UniqueFd fd, Seqlock<TicketKeyRing>* ring, bool writable) noexcept
        : fd_(std::move(fd)), ring_(ring), writable_(writable) {}

    UniqueFd fd_;
    Seqlock<TicketKeyRing>* ring_;
    bool writable_;
};

}  // namespace cspd
