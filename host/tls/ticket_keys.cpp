#include "tls/ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <utility>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace cspd {
namespace {
std::atomic<const Seqlock<TicketKeyRing>*> serving{nullptr};

TicketKey fresh_key() {
    TicketKey key;
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&key), sizeof key) != 1)
        throw std::runtime_error("ticket keys: no randomness");
    return key;
}

bool set_hmac(EVP_MAC_CTX* hmac, const TicketKey& key) {
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key.hmac), sizeof key.hmac),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
    return EVP_MAC_CTX_set_params(hmac, params) == 1;
}

/// OpenSSL's ticket callback: 1 (go on), 2 (accepted, but issue a fresh ticket), 0 (unknown
/// key: a full handshake), -1 (failure).
int on_ticket(SSL*, unsigned char name[16], unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX* cipher,
              EVP_MAC_CTX* hmac, int encrypting) {
    const Seqlock<TicketKeyRing>* ring = serving.load(std::memory_order_acquire);
    if (!ring) return 0;
    const TicketKeyRing keys = ring->read();
    if (encrypting) {
        const TicketKey& key = keys.keys[0];
        if (RAND_bytes(iv, 16) != 1) return -1;
        std::memcpy(name, key.name, sizeof key.name);
        if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.aes, iv) != 1 || !set_hmac(hmac, key)) return -1;
        return 1;
    }
    for (std::uint32_t i = 0; i < keys.count && i < TicketKeyRing::kKeys; ++i) {
        const TicketKey& key = keys.keys[i];
        if (std::memcmp(name, key.name, sizeof key.name) != 0) continue;
        if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, key.aes, iv) != 1 || !set_hmac(hmac, key)) return -1;
        return i == 0 ? 1 : 2;
    }
    return 0;
}
}  // namespace

TicketKeys TicketKeys::create() {
    UniqueFd fd(::memfd_create("cspd-ticket-keys", MFD_CLOEXEC));
    if (!fd || ::ftruncate(fd.get(), sizeof(Seqlock<TicketKeyRing>)) != 0)
        throw std::system_error(errno, std::system_category(), "ticket keys: memfd");
    void* at = ::mmap(nullptr, sizeof(Seqlock<TicketKeyRing>), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (at == MAP_FAILED) throw std::system_error(errno, std::system_category(), "ticket keys: mmap");
    auto* ring = new (at) Seqlock<TicketKeyRing>();
    TicketKeys keys(std::move(fd), ring, true);
    keys.rotate();
    return keys;
}

TicketKeys TicketKeys::attach(int fd) {
    void* at = ::mmap(nullptr, sizeof(Seqlock<TicketKeyRing>), PROT_READ, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) throw std::system_error(errno, std::system_category(), "ticket keys: mmap");
    return TicketKeys(UniqueFd(fd), static_cast<Seqlock<TicketKeyRing>*>(at), false);
}

TicketKeys::TicketKeys(TicketKeys&& other) noexcept
    : fd_(std::move(other.fd_)), ring_(std::exchange(other.ring_, nullptr)), writable_(other.writable_) {}

TicketKeys::~TicketKeys() {
    if (!ring_) return;
    if (serving.load() == ring_) serving.store(nullptr);
    ::munmap(static_cast<void*>(ring_), sizeof(Seqlock<TicketKeyRing>));
}

void TicketKeys::rotate() {
    if (!writable_) return;
    const TicketKey key = fresh_key();
    ring_->write([&key](TicketKeyRing& ring) {
        for (int i = TicketKeyRing::kKeys - 1; i > 0; --i) ring.keys[i] = ring.keys[i - 1];
        ring.keys[0] = key;
        ring.count = std::min<std::uint32_t>(ring.count + 1, TicketKeyRing::kKeys);
    });
}

void TicketKeys::serve_tickets() const { serving.store(ring_, std::memory_order_release); }

void TicketKeys::attach_to(SSL_CTX* ctx) {
    if (!serving.load(std::memory_order_acquire)) return;
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
    SSL_CTX_set_timeout(ctx, kTicketLifetimeSeconds);
}

}  // namespace cspd
