// libFuzzer target: application/x-www-form-urlencoded text as the host reads it (a query string,
// a form's body): split into fields, each name and value percent-decoded both ways, checked against
// the SDK's csp_url_decode; and the input as a Content-Type for is_form_urlencoded.
#include "common/ascii.hpp"
#include "http/form_fields.hpp"
#include "http/uri.hpp"

#include <csp/csp.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
    return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

/// The host's and the SDK's decoders agree, but for the host refusing an encoded NUL.
void decode(std::string_view text, bool plus_is_space) {
    std::string host;
    const bool host_ok = cspd::percent_decode(text, host, plus_is_space);
    std::string sdk(text.size(), '\0');
    const std::size_t n = csp_url_decode(text.data(), text.size(), sdk.data(), plus_is_space);
    if (n == static_cast<std::size_t>(-1)) {
        check(!host_ok);
        return;
    }
    check(n <= text.size());
    sdk.resize(n);
    if (host_ok) check(host == sdk);
    else check(sdk.find('\0') != std::string::npos && text.find("%00") != std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::size_t fields = 0, stop_after = size ? data[0] % 8 : 0;
    cspd::for_each_form_field(input, [&](std::string_view name, std::string_view value) {
        check(inside(name, input) && inside(value, input));
        check(!name.empty() || !value.empty() || input.find('=') != std::string_view::npos);  // "=" only
        check(name.find('&') == std::string_view::npos && name.find('=') == std::string_view::npos);
        check(value.find('&') == std::string_view::npos);
        decode(name, true);
        decode(value, true);
        decode(value, false);
        ++fields;
        return fields != stop_after || stop_after == 0;
    });
    std::size_t pairs = 1;  // at most one field between two '&'s
    for (char c : input) pairs += c == '&';
    check(fields <= pairs);
    if (stop_after) check(fields <= stop_after);

    constexpr std::string_view kType = "application/x-www-form-urlencoded";
    const bool form = cspd::is_form_urlencoded(input);
    check(form == (input.size() >= kType.size() && cspd::iequals(input.substr(0, kType.size()), kType) &&
                   (input.size() == kType.size() || input[kType.size()] == ';' || input[kType.size()] == ' ' ||
                    input[kType.size()] == '\t')));
    return 0;
}
