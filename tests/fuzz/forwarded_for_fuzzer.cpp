// libFuzzer target: the client a trusted proxy names (http/forwarded_for). Whatever X-Forwarded-For
// or Forwarded holds: no crash; what a client writes left of what its proxies added never changes
// the answer (the property --trust-proxy rests on); an untrusted hop appended on the right is the
// answer; a named client prints as an address that parses back to itself.
#include "http/forwarded_for.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}

cspd::ProxyTrust trusted_set(unsigned pick, bool forwarded) {
    static const std::vector<cspd::AddressRanges> sets = [] {
        std::vector<cspd::AddressRanges> made;
        std::string error;
        for (const char* list : {"10.0.0.0/8", "10.0.0.0/8,2001:db8::/32", "127.0.0.1,::1", "192.168.0.0/16,fc00::/7"})
            made.push_back(*cspd::AddressRanges::parse(list, error));
        return made;
    }();
    return {sets[pick % sets.size()], forwarded ? cspd::ForwardedHeader::forwarded : cspd::ForwardedHeader::x_forwarded_for};
}

std::optional<cspd::IpAddress> named(const std::vector<std::string>& values, std::string_view header,
                                     const cspd::ProxyTrust& trusted) {
    std::vector<cspd::HttpHeader> headers;
    for (const std::string& v : values) headers.push_back({header, v});
    cspd::HttpRequest request;
    request.headers = headers;
    return cspd::forwarded_client(request, trusted);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 4096) return 0;
    const bool forwarded = data[0] & 1;
    const cspd::ProxyTrust trusted = trusted_set(data[0] >> 1, forwarded);
    const std::string_view header = forwarded ? "Forwarded" : "X-Forwarded-For";
    // The rest is the field's lines, one per '\n'.
    std::vector<std::string> values(1);
    for (std::size_t i = 1; i < size; ++i) {
        if (data[i] == '\n') values.emplace_back();
        else values.back().push_back(char(data[i]));
    }
    const std::optional<cspd::IpAddress> client = named(values, header, trusted);
    if (client) {
        char text[cspd::IpAddress::kMaxText];
        const std::size_t n = client->format(text);
        check(cspd::IpAddress::parse({text, n}) == *client);
    }
    if (client && !trusted.trusts(*client)) {
        // Anything a client prepends (here: the field itself, and an address of its choosing) is
        // left of the hops its proxies added: the answer stands.
        std::vector<std::string> prepended = values;
        const std::string own = forwarded ? "for=10.9.9.9" : "10.9.9.9";
        prepended.front() = own + ", " + values.back() + ", " + prepended.front();
        check(named(prepended, header, trusted) == client);
    }
    // One more hop, not trusted in any set, appended on the right: it is the client.
    std::vector<std::string> appended = values;
    appended.push_back(forwarded ? "for=\"203.0.113.77:8080\"" : "203.0.113.77");
    check(named(appended, header, trusted) == cspd::IpAddress::parse("203.0.113.77"));
    return 0;
}
