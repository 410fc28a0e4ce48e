// libFuzzer target: the PROXY protocol header (http/proxy_header), which any peer of a
// --proxy-protocol port sends first. Whatever the bytes: no crash; a whole header is no longer
// than its input and never longer than the bound; every shorter prefix of it is incomplete (so a
// slow balancer is waited for, not refused); bytes after it change nothing; a bad verdict stands
// whatever follows; a named client prints as an address that parses back to itself.
#include "http/proxy_header.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using cspd::ProxyHeader;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const ProxyHeader h = cspd::parse_proxy_header(input);
    const std::string more = std::string(input) + "GET / HTTP/1.1\r\n\r\n";
    const ProxyHeader longer = cspd::parse_proxy_header(more);
    switch (h.state) {
    case ProxyHeader::State::whole: {
        check(h.length > 0 && h.length <= size && h.length <= cspd::kProxyHeaderMax);
        for (std::size_t n = 0; n < h.length; ++n)
            check(cspd::parse_proxy_header(input.substr(0, n)).state == ProxyHeader::State::incomplete);
        check(longer.state == ProxyHeader::State::whole && longer.length == h.length && longer.source == h.source &&
              longer.source_port == h.source_port);
        if (h.source) {
            char text[cspd::IpAddress::kMaxText];
            const std::size_t n = h.source->format(text);
            check(cspd::IpAddress::parse({text, n}) == *h.source);
        }
        break;
    }
    case ProxyHeader::State::bad:
        check(longer.state == ProxyHeader::State::bad);
        break;
    case ProxyHeader::State::incomplete:
        check(size < cspd::kProxyHeaderMax);
        break;
    }
    return 0;
}
