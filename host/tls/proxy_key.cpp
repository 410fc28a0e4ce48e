// The legacy EC_KEY_METHOD / RSA_METHOD interfaces are deprecated in OpenSSL 3 but present
// (3.0 through 3.x): a key whose method is not the default one is "foreign", and OpenSSL then
// calls the method for the private operation. This file alone uses them.
#define OPENSSL_SUPPRESS_DEPRECATED

#include "tls/proxy_key.hpp"

#include "tls/key_client.hpp"

#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/rsa.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <string>

namespace cspd {
namespace {
using key_protocol::Answer;
using key_protocol::Op;

// A signature takes the key process well under a millisecond; this is for one that hangs.
constexpr int kSignTimeoutMs = 250;

int ec_index = -1;
int rsa_index = -1;
EC_KEY_METHOD* ec_method = nullptr;
RSA_METHOD* rsa_method = nullptr;

std::optional<std::string> remote_sign(Op op, std::uint64_t key, const unsigned char* block, std::size_t size) {
    const auto answer =
        KeyClient::ask(op, key, std::string_view(reinterpret_cast<const char*>(block), size), kSignTimeoutMs);
    if (!answer || answer->kind != static_cast<std::uint8_t>(Answer::ok)) {
        KeyClient::note_sign_failure();
        return std::nullopt;
    }
    return answer->payload;
}

std::uint64_t key_of(EC_KEY* key) { return reinterpret_cast<std::uintptr_t>(EC_KEY_get_ex_data(key, ec_index)); }

int ec_sign(int, const unsigned char* digest, int digest_size, unsigned char* signature, unsigned int* signature_size,
            const BIGNUM*, const BIGNUM*, EC_KEY* key) {
    const auto signed_ = remote_sign(Op::sign_ecdsa, key_of(key), digest, static_cast<std::size_t>(digest_size));
    if (!signed_ || signed_->size() > static_cast<std::size_t>(ECDSA_size(key))) return 0;
    std::memcpy(signature, signed_->data(), signed_->size());
    *signature_size = static_cast<unsigned int>(signed_->size());
    return 1;
}

ECDSA_SIG* ec_sign_sig(const unsigned char* digest, int digest_size, const BIGNUM*, const BIGNUM*, EC_KEY* key) {
    const auto signed_ = remote_sign(Op::sign_ecdsa, key_of(key), digest, static_cast<std::size_t>(digest_size));
    if (!signed_) return nullptr;
    const auto* der = reinterpret_cast<const unsigned char*>(signed_->data());
    return d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(signed_->size()));
}

int rsa_private_encrypt(int size, const unsigned char* from, unsigned char* to, RSA* rsa, int padding) {
    // PKCS#1 v1.5 signs a DigestInfo; PSS arrives already encoded, for the raw operation.
    const Op op = padding == RSA_PKCS1_PADDING ? Op::sign_rsa_pkcs1 : padding == RSA_NO_PADDING ? Op::sign_rsa_pss : Op{};
    if (op == Op{}) return -1;
    const auto key = reinterpret_cast<std::uintptr_t>(RSA_get_ex_data(rsa, rsa_index));
    const auto signed_ = remote_sign(op, key, from, static_cast<std::size_t>(size));
    if (!signed_ || signed_->size() != static_cast<std::size_t>(RSA_size(rsa))) return -1;
    std::memcpy(to, signed_->data(), signed_->size());
    return static_cast<int>(signed_->size());
}

void make_methods() {
    ec_index = EC_KEY_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    ec_method = EC_KEY_METHOD_new(EC_KEY_OpenSSL());
    EC_KEY_METHOD_set_sign(ec_method, ec_sign, nullptr, ec_sign_sig);
    rsa_index = RSA_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    rsa_method = RSA_meth_dup(RSA_PKCS1_OpenSSL());
    RSA_meth_set1_name(rsa_method, "cspd key process");
    RSA_meth_set_priv_enc(rsa_method, rsa_private_encrypt);
    RSA_meth_set_flags(rsa_method, RSA_meth_get_flags(rsa_method) | RSA_FLAG_EXT_PKEY | RSA_METHOD_FLAG_NO_CHECK);
}

PkeyPtr proxy_ec(const EC_KEY* public_key, std::uint64_t key_id) {
    EC_KEY* key = EC_KEY_new();
    if (!key) return nullptr;
    // The method first: OpenSSL decides a key is foreign when it is assigned to the EVP_PKEY.
    if (EC_KEY_set_method(key, ec_method) != 1 || EC_KEY_set_group(key, EC_KEY_get0_group(public_key)) != 1 ||
        EC_KEY_set_public_key(key, EC_KEY_get0_public_key(public_key)) != 1 ||
        EC_KEY_set_ex_data(key, ec_index, reinterpret_cast<void*>(static_cast<std::uintptr_t>(key_id))) != 1) {
        EC_KEY_free(key);
        return nullptr;
    }
    PkeyPtr proxy(EVP_PKEY_new());
    if (!proxy || EVP_PKEY_assign_EC_KEY(proxy.get(), key) != 1) {
        EC_KEY_free(key);
        return nullptr;
    }
    return proxy;
}

PkeyPtr proxy_rsa(const RSA* public_key, std::uint64_t key_id) {
    RSA* key = RSA_new();
    if (!key) return nullptr;
    const BIGNUM *n = nullptr, *e = nullptr;
    RSA_get0_key(public_key, &n, &e, nullptr);
    BIGNUM* n_copy = BN_dup(n);
    BIGNUM* e_copy = BN_dup(e);
    if (RSA_set_method(key, rsa_method) != 1 || !n_copy || !e_copy || RSA_set0_key(key, n_copy, e_copy, nullptr) != 1) {
        BN_free(n_copy);
        BN_free(e_copy);
        RSA_free(key);
        return nullptr;
    }
    RSA_set_ex_data(key, rsa_index, reinterpret_cast<void*>(static_cast<std::uintptr_t>(key_id)));
    PkeyPtr proxy(EVP_PKEY_new());
    if (!proxy || EVP_PKEY_assign_RSA(proxy.get(), key) != 1) {
        RSA_free(key);
        return nullptr;
    }
    return proxy;
}
}  // namespace

PkeyPtr make_proxy_key(X509* leaf, std::uint64_t key_id) {
    static std::once_flag made;
    std::call_once(made, make_methods);
    EVP_PKEY* public_key = X509_get0_pubkey(leaf);
    PkeyPtr proxy;
    if (public_key && EVP_PKEY_get_base_id(public_key) == EVP_PKEY_EC)
        proxy = proxy_ec(EVP_PKEY_get0_EC_KEY(public_key), key_id);
    else if (public_key && EVP_PKEY_get_base_id(public_key) == EVP_PKEY_RSA)
        proxy = proxy_rsa(EVP_PKEY_get0_RSA(public_key), key_id);
    ERR_clear_error();
    return proxy;
}

}  // namespace cspd
