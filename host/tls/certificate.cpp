#include "tls/certificate.hpp"

#include "common/ascii.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

namespace cspd {
namespace {
// A certificate file is a few KiB; anything this large is not one.
constexpr std::uintmax_t kMaxFileBytes = 1024 * 1024;

/// The file's bytes, or a refusal. Key material is wiped from the buffer by the caller.
bool read_small_file(const std::filesystem::path& path, std::string& bytes, std::string& refusal) {
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) {
        refusal = "cannot read " + path.filename().string() + ": " + ec.message();
        return false;
    }
    if (size > kMaxFileBytes) {
        refusal = path.filename().string() + " is larger than 1 MiB: not a certificate file";
        return false;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) {
        refusal = "cannot read " + path.filename().string();
        return false;
    }
    bytes = std::move(text).str();
    return true;
}

struct Wiped {
    std::string& bytes;
    ~Wiped() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

std::int64_t unix_seconds(const ASN1_TIME* time) {
    std::tm tm{};
    if (!time || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
    return static_cast<std::int64_t>(timegm(&tm));
}

std::string sha256_of(X509* leaf) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (X509_digest(leaf, EVP_sha256(), digest, &size) != 1) return {};
    std::string hex;
    for (unsigned int i = 0; i < size; ++i) {
        char pair[4];
        std::snprintf(pair, sizeof pair, i + 1 < size ? "%02X:" : "%02X", digest[i]);
        hex += pair;
    }
    return hex;
}

void read_names(X509* leaf, Certificate& into) {
    auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
    if (!names) return;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
        const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
        if (name->type == GEN_DNS) {
            const ASN1_STRING* text = name->d.dNSName;
            std::string dns(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                            static_cast<std::size_t>(ASN1_STRING_length(text)));
            for (char& c : dns) c = ascii_lower(c);
            into.dns_names.push_back(std::move(dns));
        } else if (name->type == GEN_IPADD) {
            const ASN1_OCTET_STRING* bytes = name->d.iPAddress;
            char text[INET6_ADDRSTRLEN] = {};
            const int length = ASN1_STRING_length(bytes);
            const int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : 0;
            if (family && ::inet_ntop(family, ASN1_STRING_get0_data(bytes), text, sizeof text))
                into.ip_names.emplace_back(text);
        }
    }
    GENERAL_NAMES_free(names);
}

}  // namespace

std::string utc_text(std::int64_t unix) {
    char text[32];
    const std::time_t t = static_cast<std::time_t>(unix);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return text;
}

std::shared_ptr<Certificate> describe_chain(std::string file, std::string_view chain_pem) {
    auto certificate = std::make_shared<Certificate>();
    certificate->file = std::move(file);
    // The chain: every CERTIFICATE block in order (other blocks, the key's, are skipped).
    BioPtr chain(BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size())));
    while (X509* x = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr)) {
        if (!certificate->leaf)
            certificate->leaf.reset(x);
        else
            certificate->chain.emplace_back(x);
    }
    ERR_clear_error();  // the end of the blocks reads as an error
    if (!certificate->leaf) return nullptr;
    certificate->not_before = unix_seconds(X509_get0_notBefore(certificate->leaf.get()));
    certificate->not_after = unix_seconds(X509_get0_notAfter(certificate->leaf.get()));
    read_names(certificate->leaf.get(), *certificate);
    certificate->sha256 = sha256_of(certificate->leaf.get());
    return certificate;
}

LoadedCertificate parse_certificate(std::string file, std::string_view chain_pem, std::string_view key_pem,
                                    std::int64_t now) {
    LoadedCertificate result;
    std::shared_ptr<Certificate> certificate = describe_chain(std::move(file), chain_pem);
    if (!certificate) {
        result.refusal = "no certificate found (not PEM, or cut short)";
        return result;
    }
    BioPtr key(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
    // A passphrase is never asked for: an encrypted key is refused, not waited on.
    certificate->key.reset(PEM_read_bio_PrivateKey(key.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr));
    ERR_clear_error();
    if (!certificate->key) {
        result.refusal = "no private key found (missing, encrypted, or cut short)";
        return result;
    }
    if (X509_check_private_key(certificate->leaf.get(), certificate->key.get()) != 1) {
        ERR_clear_error();
        result.refusal = "the private key does not belong to the certificate";
        return result;
    }
    if (now < certificate->not_before) {
        result.refusal = "not valid before " + utc_text(certificate->not_before);
        return result;
    }
    if (now > certificate->not_after) {
        result.refusal = "expired at " + utc_text(certificate->not_after);
        return result;
    }
    if (certificate->dns_names.empty() && certificate->ip_names.empty()) {
        result.refusal = "no subjectAltName names (clients match names there, not in the subject)";
        return result;
    }
    result.certificate = std::move(certificate);
    return result;
}

LoadedCertificate load_certificate(const std::filesystem::path& pem, const std::filesystem::path& key,
                                   std::int64_t now) {
    LoadedCertificate result;
    std::string chain_bytes, key_bytes;
    Wiped wipe_chain{chain_bytes}, wipe_key{key_bytes};
    if (!read_small_file(pem, chain_bytes, result.refusal)) return result;
    if (!key.empty() && !read_small_file(key, key_bytes, result.refusal)) return result;
    const std::string file =
        key.empty() ? pem.filename().string() : pem.filename().string() + "+" + key.filename().string();
    return parse_certificate(file, chain_bytes, key.empty() ? chain_bytes : key_bytes, now);
}

bool certificate_covers(const Certificate& certificate, std::string_view name) {
    for (const std::string& dns : certificate.dns_names) {
        if (dns == name) return true;
        // "*.example.com" covers "a.example.com", not "example.com" nor "a.b.example.com".
        if (dns.size() > 2 && dns[0] == '*' && dns[1] == '.') {
            const std::string_view suffix = std::string_view(dns).substr(1);
            if (name.size() > suffix.size() && name.ends_with(suffix) &&
                name.substr(0, name.size() - suffix.size()).find('.') == std::string_view::npos)
                return true;
        }
    }
    return false;
}

}  // namespace cspd
