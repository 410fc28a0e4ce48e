#include "tls/self_signed.hpp"

#include "tls/openssl_types.hpp"

#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace cspd {
namespace {
[[noreturn]] void fail_self_signed(const char* what) {
    throw std::runtime_error(std::string("self-signed certificate: ") + what + ": " + take_openssl_errors());
}

void add_extension(X509* cert, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (!extension || X509_add_ext(cert, extension, -1) != 1) fail_self_signed("extension");
    X509_EXTENSION_free(extension);
}

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(size));
}
}  // namespace

std::string make_self_signed_pem(const SelfSignedSpec& spec) {
    PkeyPtr key(spec.rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256"));
    if (!key) fail_self_signed("key");
    X509Ptr cert(X509_new());
    if (!cert) fail_self_signed("X509_new");
    X509_set_version(cert.get(), 2);
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) fail_self_signed("serial");
    serial[0] &= 0x7f;  // positive
    BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get()));
    BN_free(number);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), spec.valid_from_s);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.valid_until_s);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("cspd self-signed"), -1,
                               -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    if (X509_set_pubkey(cert.get(), key.get()) != 1) fail_self_signed("public key");
    if (!spec.alt_names.empty()) {
        std::string names;
        for (const std::string& entry : spec.alt_names) names += (names.empty() ? "" : ",") + entry;
        add_extension(cert.get(), NID_subject_alt_name, names.c_str());
    }
    add_extension(cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), NID_ext_key_usage, "serverAuth");
    add_extension(cert.get(), NID_subject_key_identifier, "hash");
    if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) fail_self_signed("signing");

    BioPtr out(BIO_new(BIO_s_mem()));
    if (!out || PEM_write_bio_PrivateKey(out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
        PEM_write_bio_X509(out.get(), cert.get()) != 1)
        fail_self_signed("PEM");
    return bio_text(out.get());
}

}  // namespace cspd
