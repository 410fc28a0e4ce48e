#include "http/response_fields.hpp"

#include "common/ascii.hpp"

#include <string_view>

namespace cspd {
namespace {
/// A field of an HTTP/1 connection, never sent over HTTP/2 (RFC 9113 §8.2.2). `name` is lower case.
bool connection_specific(std::string_view name) {
    return name == "connection" || name == "keep-alive" || name == "transfer-encoding" ||
           name == "proxy-connection" || name == "upgrade";
}
}  // namespace

bool read_response_head(std::string& bytes, ResponseFields& into) {
    into.fields.clear();
    const std::string_view all(bytes);
    const std::size_t end = all.find("\r\n\r\n");
    if (end == std::string_view::npos) return false;
    into.head_size = end + 4;
    // "HTTP/1.1 200 Reason"
    if (all.size() < 12 || all.substr(0, 9) != "HTTP/1.1 ") return false;
    int status = 0;
    for (std::size_t i = 9; i < 12; ++i) {
        if (all[i] < '0' || all[i] > '9') return false;
        status = status * 10 + (all[i] - '0');
    }
    if (status < 100) return false;
    into.status = status;
    std::size_t line = all.find("\r\n");
    while (line < end) {
        const std::size_t start = line + 2;
        const std::size_t next = all.find("\r\n", start);
        const std::size_t colon = all.find(':', start);
        if (colon == std::string_view::npos || colon >= next || colon == start) return false;
        for (std::size_t i = start; i < colon; ++i) bytes[i] = ascii_lower(bytes[i]);
        const std::string_view name = all.substr(start, colon - start);
        std::size_t value = colon + 1, value_end = next;
        while (value < value_end && (all[value] == ' ' || all[value] == '\t')) ++value;
        // RFC 9113 §8.2.1: no whitespace at either end of a value (clients drop such a field).
        while (value_end > value && (all[value_end - 1] == ' ' || all[value_end - 1] == '\t')) --value_end;
        if (!connection_specific(name)) into.fields.push_back({name, all.substr(value, value_end - value)});
        line = next;
    }
    return true;
}

}  // namespace cspd
