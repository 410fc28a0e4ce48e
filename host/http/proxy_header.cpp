#include "http/proxy_header.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace cspd {
namespace {

constexpr std::string_view kV1Start = "PROXY ";
constexpr std::size_t kV1Max = 107;  // the spec's longest line, CR LF included
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};

ProxyHeader bad(const char* why) {
    ProxyHeader h;
    h.state = ProxyHeader::State::bad;
    h.why = why;
    return h;
}

/// `text` is a prefix of `whole` (or all of it, and more).
bool starts_like(std::string_view text, std::string_view whole) {
    const std::size_t n = std::min(text.size(), whole.size());
    return text.substr(0, n) == whole.substr(0, n);
}

bool parse_port(std::string_view text, unsigned short& port) {
    // 1 to 5 digits, no sign, no leading zero but "0" itself (the spec's form).
    if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return false;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value > 65535) return false;
    port = static_cast<unsigned short>(value);
    return true;
}

ProxyHeader parse_v1(std::string_view bytes) {
    const std::size_t end = bytes.substr(0, kV1Max).find("\r\n");
    if (end == std::string_view::npos)
        return bytes.size() >= kV1Max ? bad("a PROXY v1 line longer than 107 bytes") : ProxyHeader{};
    ProxyHeader h;
    h.state = ProxyHeader::State::whole;
    h.length = end + 2;
    std::string_view line = bytes.substr(kV1Start.size(), end - kV1Start.size());
    if (line.starts_with("UNKNOWN")) return h;  // the balancer could not say: the peer stands
    // "TCP4 SRC DST SPORT DPORT": single spaces, the family's own address form.
    std::string_view parts[5];
    for (int i = 0; i < 5; ++i) {
        const std::size_t space = i < 4 ? line.find(' ') : line.size();
        if (space == std::string_view::npos) return bad("a PROXY v1 line without its five fields");
        parts[i] = line.substr(0, space);
        line = i < 4 ? line.substr(space + 1) : std::string_view();
    }
    const bool v4 = parts[0] == "TCP4";
    if (!v4 && parts[0] != "TCP6") return bad("a PROXY v1 line of a protocol other than TCP4, TCP6 or UNKNOWN");
    const std::optional<IpAddress> source = IpAddress::parse(parts[1]);
    const std::optional<IpAddress> destination = IpAddress::parse(parts[2]);
    unsigned short destination_port = 0;
    // A TCP6 line writes its addresses in IPv6 form, even an IPv4-mapped one; TCP4 in dotted form.
    const auto family_fits = [&](std::string_view text, const std::optional<IpAddress>& a) {
        return a && (v4 ? a->is_v4() && text.find(':') == std::string_view::npos : text.find(':') != std::string_view::npos);
    };
    if (!family_fits(parts[1], source) || !family_fits(parts[2], destination))
        return bad("a PROXY v1 line whose addresses are not of its family");
    if (!parse_port(parts[3], h.source_port) || !parse_port(parts[4], destination_port))
        return bad("a PROXY v1 line with a bad port");
    h.source = source;
    return h;
}

ProxyHeader parse_v2(std::string_view bytes) {
    if (bytes.size() < 16) return {};
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
    if ((byte(12) >> 4) != 2) return bad("a PROXY v2 header of another version");
    const unsigned command = byte(12) & 0x0f;
    if (command > 1) return bad("a PROXY v2 header with a command other than LOCAL or PROXY");
    const std::size_t body = (std::size_t(byte(14)) << 8) | byte(15);
    if (body > kProxyV2MaxBody) return bad("a PROXY v2 header longer than this server takes");
    if (bytes.size() < 16 + body) return {};
    ProxyHeader h;
    h.state = ProxyHeader::State::whole;
    h.length = 16 + body;
    if (command == 0) return h;  // LOCAL: the balancer's own connection (a health check)
    const unsigned family = byte(13) >> 4, transport = byte(13) & 0x0f;
    if (transport > 2) return bad("a PROXY v2 header of an unknown transport");
    const auto port_at = [&](std::size_t i) { return static_cast<unsigned short>((byte(i) << 8) | byte(i + 1)); };
    if (family == 1) {  // AF_INET: source, destination, their ports
        if (body < 12) return bad("a PROXY v2 header too short for its IPv4 addresses");
        std::uint32_t source = 0;
        for (std::size_t i = 16; i < 20; ++i) source = (source << 8) | byte(i);
        h.source = IpAddress::v4(source);
        h.source_port = port_at(24);
    } else if (family == 2) {  // AF_INET6
        if (body < 36) return bad("a PROXY v2 header too short for its IPv6 addresses");
        IpAddress source;
        std::memcpy(source.bytes.data(), bytes.data() + 16, 16);
        h.source = source;
        h.source_port = port_at(48);
    } else if (family > 3) {
        return bad("a PROXY v2 header of an unknown address family");
    }  // AF_UNSPEC, AF_UNIX: nothing to name the client by; the peer stands
    return h;
}

}  // namespace

ProxyHeader parse_proxy_header(std::string_view bytes) {
    if (bytes.empty()) return {};
    if (starts_like(bytes, kV1Start)) return bytes.size() < kV1Start.size() ? ProxyHeader{} : parse_v1(bytes);
    if (starts_like(bytes, kV2Signature)) return bytes.size() < kV2Signature.size() ? ProxyHeader{} : parse_v2(bytes);
    return bad("no PROXY protocol header (--proxy-protocol: every connection must begin with one)");
}

}  // namespace cspd
