#include "tls/key_service.hpp"

#include "tls/self_signed.hpp"

#include <nlohmann/json.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <ctime>
#include <vector>

namespace cspd {
namespace {
using key_protocol::Answer;
using key_protocol::Op;

// A retired key signs this long for handshakes that began before workers saw the change.
constexpr std::int64_t kRetiredKeySeconds = 120;

std::string chain_pem(const Certificate& certificate) {
    BioPtr out(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(out.get(), certificate.leaf.get());
    for (const X509Ptr& link : certificate.chain) PEM_write_bio_X509(out.get(), link.get());
    char* data = nullptr;
    const long size = BIO_get_mem_data(out.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
}

/// MGF1 (RFC 8017 §B.2.1): `size` bytes of Hash(seed || counter) for counter 0, 1, ...
bool mgf1(unsigned char* mask, std::size_t size, const unsigned char* seed, std::size_t seed_size, const EVP_MD* md) {
    std::vector<unsigned char> input(seed, seed + seed_size);
    input.resize(seed_size + 4);
    unsigned char block[EVP_MAX_MD_SIZE];
    for (std::uint32_t counter = 0; size > 0; ++counter) {
        for (int i = 0; i < 4; ++i) input[seed_size + i] = static_cast<unsigned char>(counter >> (24 - 8 * i));
        unsigned int block_size = 0;
        if (EVP_Digest(input.data(), input.size(), block, &block_size, md, nullptr) != 1) return false;
        const std::size_t take = std::min<std::size_t>(size, block_size);
        std::memcpy(mask, block, take);
        mask += take;
        size -= take;
    }
    return true;
}

std::string answer_frame(Answer answer, std::string_view payload = {}) {
    return key_protocol::encode(static_cast<std::uint8_t>(answer), 0, payload);
}
}  // namespace

bool is_pss_encoding(std::string_view block, int modulus_bits) {
    const std::size_t em_bits = static_cast<std::size_t>(modulus_bits) - 1;
    const std::size_t em_len = (em_bits + 7) / 8;
    // With a modulus of 8n+1 bits the block has a leading zero byte that is not part of EM.
    if (block.size() == em_len + 1) {
        if (block[0] != 0) return false;
        block.remove_prefix(1);
    }
    if (block.size() != em_len || static_cast<unsigned char>(block.back()) != 0xbc) return false;
    const auto* em = reinterpret_cast<const unsigned char*>(block.data());
    const unsigned top_bits = static_cast<unsigned>(8 * em_len - em_bits);  // must be zero in EM
    for (const EVP_MD* md : {EVP_sha256(), EVP_sha384(), EVP_sha512()}) {
        const std::size_t h_len = static_cast<std::size_t>(EVP_MD_get_size(md));
        const std::size_t s_len = h_len;
        if (em_len < h_len + s_len + 2) continue;
        const std::size_t db_len = em_len - h_len - 1;
        if (top_bits && (em[0] >> (8 - top_bits)) != 0) continue;
        std::vector<unsigned char> db(db_len);
        if (!mgf1(db.data(), db_len, em + db_len, h_len, md)) continue;
        for (std::size_t i = 0; i < db_len; ++i) db[i] ^= em[i];
        if (top_bits) db[0] &= static_cast<unsigned char>(0xff >> top_bits);
        const std::size_t one_at = db_len - s_len - 1;  // DB = PS (zeros) || 0x01 || salt
        bool zeros = true;
        for (std::size_t i = 0; i < one_at; ++i) zeros = zeros && db[i] == 0;
        if (zeros && db[one_at] == 0x01) return true;
    }
    return false;
}

KeyService::KeyService(const std::filesystem::path& certs, bool self_signed, std::optional<KeyOutsider> outsider) {
    if (!certs.empty()) folder_.emplace(certs, std::move(outsider));
    if (self_signed) {
        std::string pem = make_self_signed_pem();
        LoadedCertificate made = parse_certificate("(--tls-self-signed)", pem, pem, std::int64_t(std::time(nullptr)));
        OPENSSL_cleanse(pem.data(), pem.size());
        self_signed_ = made.certificate;
        if (self_signed_)
            spdlog::info("HTTPS: self-signed certificate for localhost, 127.0.0.1 and ::1 (served while --certs has "
                         "none), SHA-256 {}",
                         self_signed_->sha256);
    }
}

std::uint64_t KeyService::id_of(const std::shared_ptr<const Certificate>& certificate) {
    for (auto& [id, held] : keys_)
        if (held.certificate == certificate) {
            held.retired_at = 0;
            return id;
        }
    const std::uint64_t id = next_id_++;
    keys_[id].certificate = certificate;
    return id;
}

void KeyService::rescan(std::int64_t now) {
    const bool changed = folder_ ? folder_->rescan(now) : false;
    // Refusals change what /-/status shows even when what serves does not.
    std::size_t refusals = 0;
    if (folder_)
        for (const auto& entry : folder_->entries())
            refusals = refusals * 31 + std::hash<std::string>()(entry.file + entry.refusal) + std::size_t(entry.refused_at);
    const bool first = generation_ == 0;
    if (changed || first || refusals != refusals_seen_) {
        refusals_seen_ = refusals;
        make_listing(now);
    }
    for (auto it = keys_.begin(); it != keys_.end();)
        it = it->second.retired_at && now - it->second.retired_at > kRetiredKeySeconds ? keys_.erase(it) : std::next(it);
}

void KeyService::make_listing(std::int64_t now) {
    ++generation_;
    std::size_t default_index = 0;
    std::vector<std::shared_ptr<const Certificate>> serving;
    if (folder_) serving = folder_->serving(default_index);
    if (serving.empty() && self_signed_) serving.push_back(self_signed_);

    for (auto& [id, held] : keys_) held.retired_at = held.retired_at ? held.retired_at : now;
    nlohmann::json listing{{"generation", generation_}};
    nlohmann::json& certificates = listing["certificates"] = nlohmann::json::array();
    for (std::size_t i = 0; i < serving.size(); ++i)
        certificates.push_back({{"key", id_of(serving[i])},
                                {"file", serving[i]->file},
                                {"chain", chain_pem(*serving[i])},
                                {"default", i == default_index}});
    nlohmann::json& entries = listing["entries"] = nlohmann::json::array();
    if (folder_)
        for (const auto& entry : folder_->entries()) {
            std::uint64_t serving_key = 0;
            for (const auto& [id, held] : keys_)
                if (held.certificate == entry.serving && !held.retired_at) serving_key = id;
            entries.push_back({{"name", entry.name},
                               {"file", entry.file},
                               {"serving", serving_key},
                               {"refusal", entry.refusal},
                               {"refused_at", entry.refused_at}});
        }
    listing_ = listing.dump();
}

std::string KeyService::answer(const key_protocol::Frame& request) {
    const Op op = static_cast<Op>(request.kind);
    if (op == Op::list) {
        if (request.id == generation_) return answer_frame(Answer::unchanged);
        return key_protocol::encode(static_cast<std::uint8_t>(Answer::ok), generation_, listing_);
    }
    if (op != Op::sign_ecdsa && op != Op::sign_rsa_pkcs1 && op != Op::sign_rsa_pss) return answer_frame(Answer::refused);
    const auto held = keys_.find(request.id);
    if (held == keys_.end()) return answer_frame(Answer::refused);
    bool refused = false;
    std::string signature = sign(op, held->second, request.payload, refused);
    if (refused) return answer_frame(Answer::refused);
    if (signature.empty()) return answer_frame(Answer::failed);
    return answer_frame(Answer::ok, signature);
}

std::string KeyService::sign(Op op, Held& held, std::string_view block, bool& refused) {
    const Certificate& certificate = *held.certificate;
    EVP_PKEY* key = certificate.key.get();
    const int type = EVP_PKEY_get_base_id(key);
    const bool ec = type == EVP_PKEY_EC;
    const bool rsa = type == EVP_PKEY_RSA;
    const std::size_t key_bytes = static_cast<std::size_t>(EVP_PKEY_get_size(key));
    if ((op == Op::sign_ecdsa && (!ec || block.size() > 64)) ||
        (op == Op::sign_rsa_pkcs1 && (!rsa || block.size() + 11 > key_bytes)) ||
        (op == Op::sign_rsa_pss && (!rsa || !is_pss_encoding(block, EVP_PKEY_get_bits(key))))) {
        refused = true;
        return {};
    }
    auto& ctx = held.signing[static_cast<int>(op) - static_cast<int>(Op::sign_ecdsa)];
    if (!ctx) {
        ctx.reset(EVP_PKEY_CTX_new(key, nullptr));
        if (!ctx || EVP_PKEY_sign_init(ctx.get()) != 1 ||
            (rsa && EVP_PKEY_CTX_set_rsa_padding(ctx.get(), op == Op::sign_rsa_pss ? RSA_NO_PADDING : RSA_PKCS1_PADDING) != 1)) {
            ctx.reset();
            spdlog::warn("key process: cannot set up signing with {}: {}", certificate.file, take_openssl_errors());
            return {};
        }
    }
    std::string signature(key_bytes, '\0');
    std::size_t size = signature.size();
    const auto* input = reinterpret_cast<const unsigned char*>(block.data());
    if (EVP_PKEY_sign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size, input, block.size()) != 1) {
        spdlog::warn("key process: signing with {} failed: {}", certificate.file, take_openssl_errors());
        return {};
    }
    signature.resize(size);
    return signature;
}

}  // namespace cspd
