// The key process's side of its protocol: whatever bytes come from a worker (and so from any
// handler in it), frames are taken or refused whole, every answer is one well-formed frame, and
// a signing request is signed only when its block is what its op says (the key here is ECDSA:
// an RSA op is refused, whatever it carries). The EMSA-PSS check alone sees the same bytes as
// blocks of several modulus sizes.
#include "tls/key_protocol.hpp"
#include "tls/key_service.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {
cspd::KeyService& service() {
    static cspd::KeyService* made = [] {
        spdlog::set_level(spdlog::level::off);
        auto* s = new cspd::KeyService("", true);  // one self-signed ECDSA key, id 1
        s->rescan(0);
        return s;
    }();
    return *made;
}

void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cspd::key_protocol;
    std::string input(reinterpret_cast<const char*>(data), size);
    for (int bits : {2048, 2049, 3072, 4096}) (void)cspd::is_pss_encoding(input, bits);

    std::string buffer = input;
    for (;;) {
        bool bad = false;
        const auto request = take(buffer, bad);
        if (bad || !request) break;
        std::string answer = service().answer(*request);
        bool answer_bad = false;
        const auto parsed = take(answer, answer_bad);
        check(parsed.has_value() && !answer_bad && answer.empty());
        const auto op = static_cast<Op>(request->kind);
        if (op == Op::sign_rsa_pkcs1 || op == Op::sign_rsa_pss)
            check(parsed->kind == static_cast<std::uint8_t>(Answer::refused));
        if (op == Op::sign_ecdsa && parsed->kind == static_cast<std::uint8_t>(Answer::ok))
            check(request->id == 1 && request->payload.size() <= 64 && !parsed->payload.empty());
    }
    return 0;
}
