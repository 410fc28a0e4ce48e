#include "tls/openssl_types.hpp"

#include <openssl/err.h>

namespace cspd {

std::string take_openssl_errors() {
    std::string text;
    while (const unsigned long code = ERR_get_error()) {
        if (!text.empty()) text += "; ";
        const char* reason = ERR_reason_error_string(code);
        text += reason ? reason : "error " + std::to_string(ERR_GET_REASON(code));
    }
    return text;
}

}  // namespace cspd
