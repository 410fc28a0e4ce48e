#include "common/ip_address.hpp"

#include "common/ascii.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cspd {
namespace {
constexpr std::array<std::uint8_t, 12> kV4Prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
}  // namespace

namespace {
/// "a.b.c.d" as inet_ntop writes it (no leading zeros, each part at most 255), or false: every
/// request a limit counts reads its client's address this way, so it is worth the few lines.
bool parse_dotted_quad(std::string_view text, std::uint8_t (&out)[4]) {
    const char* p = text.data();
    const char* const end = p + text.size();
    for (int part = 0; part < 4; ++part) {
        if (part > 0 && (p == end || *p++ != '.')) return false;
        unsigned value = 0;
        const char* const first = p;
        while (p != end && unsigned(*p - '0') < 10 && p - first < 3) value = value * 10 + unsigned(*p++ - '0');
        if (p == first || value > 255 || (*first == '0' && p - first > 1)) return false;
        out[part] = std::uint8_t(value);
    }
    return p == end;
}
}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    if (std::uint8_t v4[4]; parse_dotted_quad(text, v4)) {
        std::optional<IpAddress> address(std::in_place);
        std::copy(kV4Prefix.begin(), kV4Prefix.end(), address->bytes.begin());
        std::memcpy(address->bytes.data() + 12, v4, 4);
        return address;
    }
    char buffer[48];
    if (text.empty() || text.size() >= sizeof buffer) return std::nullopt;
    std::memcpy(buffer, text.data(), text.size());
    buffer[text.size()] = '\0';
    IpAddress address;
    in_addr v4{};
    if (::inet_pton(AF_INET, buffer, &v4) == 1) {
        std::copy(kV4Prefix.begin(), kV4Prefix.end(), address.bytes.begin());
        std::memcpy(address.bytes.data() + 12, &v4, 4);
        return address;
    }
    if (::inet_pton(AF_INET6, buffer, address.bytes.data()) == 1) return address;
    return std::nullopt;
}

IpAddress IpAddress::from_sockaddr(const sockaddr* where) {
    IpAddress address;
    if (where->sa_family == AF_INET6) {
        std::memcpy(address.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(where)->sin6_addr, 16);
    } else if (where->sa_family == AF_INET) {
        std::copy(kV4Prefix.begin(), kV4Prefix.end(), address.bytes.begin());
        std::memcpy(address.bytes.data() + 12, &reinterpret_cast<const sockaddr_in*>(where)->sin_addr, 4);
    }
    return address;
}

IpAddress IpAddress::v4(std::uint32_t host_order) {
    IpAddress address;
    std::copy(kV4Prefix.begin(), kV4Prefix.end(), address.bytes.begin());
    const std::uint32_t network = htonl(host_order);
    std::memcpy(address.bytes.data() + 12, &network, 4);
    return address;
}

bool IpAddress::is_v4() const { return std::equal(kV4Prefix.begin(), kV4Prefix.end(), bytes.begin()); }

IpAddress IpAddress::limit_key() const {
    if (is_v4()) return *this;
    IpAddress key = *this;
    std::fill(key.bytes.begin() + 8, key.bytes.end(), 0);
    return key;
}

std::size_t IpAddress::format(char (&out)[kMaxText]) const {
    const bool v4 = is_v4();
    if (!::inet_ntop(v4 ? AF_INET : AF_INET6, bytes.data() + (v4 ? 12 : 0), out, sizeof out)) out[0] = '\0';
    return std::strlen(out);
}

std::uint32_t IpAddress::v4_value() const {
    if (!is_v4()) return 0;
    std::uint32_t network;
    std::memcpy(&network, bytes.data() + 12, 4);
    return ntohl(network);
}

std::string IpAddress::text() const {
    char out[kMaxText];
    return std::string(out, format(out));
}

std::optional<AddressRange> AddressRange::parse(std::string_view text) {
    const std::size_t slash = text.find('/');
    const std::optional<IpAddress> base = IpAddress::parse(text.substr(0, slash));
    if (!base) return std::nullopt;
    const unsigned width = base->is_v4() ? 32 : 128;
    unsigned bits = width;
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
        if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || bits > width)
            return std::nullopt;
    }
    AddressRange range{*base, bits + (128 - width)};
    // The host bits are cleared, so "10.1.2.3/8" means 10.0.0.0/8 as in nginx's set_real_ip_from.
    for (unsigned bit = range.prefix; bit < 128; ++bit) range.base.bytes[bit / 8] &= std::uint8_t(~(0x80u >> (bit % 8)));
    return range;
}

bool AddressRange::contains(const IpAddress& address) const {
    const unsigned whole = prefix / 8, rest = prefix % 8;
    if (!std::equal(base.bytes.begin(), base.bytes.begin() + whole, address.bytes.begin())) return false;
    if (rest == 0) return true;
    const std::uint8_t mask = std::uint8_t(0xff00u >> rest);
    return (address.bytes[whole] & mask) == base.bytes[whole];
}

std::optional<AddressRanges> AddressRanges::parse(std::string_view list, std::string& error) {
    AddressRanges parsed;
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        const std::string_view item = trim_ows(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        if (item.empty()) continue;
        const std::optional<AddressRange> range = AddressRange::parse(item);
        if (!range) {
            error = "'" + std::string(item) + "' is not an address or an address/prefix";
            return std::nullopt;
        }
        parsed.ranges_.push_back(*range);
    }
    return parsed;
}

bool AddressRanges::contains(const IpAddress& address) const {
    return std::any_of(ranges_.begin(), ranges_.end(), [&](const AddressRange& r) { return r.contains(address); });
}

}  // namespace cspd
