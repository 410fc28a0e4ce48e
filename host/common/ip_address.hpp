// An IPv4 or IPv6 address as 16 bytes (IPv4 as ::ffff:a.b.c.d, RFC 4291 §2.5.5.2), so that one
// type serves the peer of a socket, an address a proxy forwards, and the key a per-client limit
// counts under; and address ranges in CIDR form (--trust-proxy).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sockaddr;

namespace cspd {

struct IpAddress {
    std::array<std::uint8_t, 16> bytes{};

    /// "192.0.2.1", "2001:db8::1", "::ffff:192.0.2.1"; nothing else (no brackets, port or zone).
    static std::optional<IpAddress> parse(std::string_view text);
    /// From a socket's address (AF_INET or AF_INET6); the unspecified address for another family.
    static IpAddress from_sockaddr(const sockaddr* address);
    static IpAddress v4(std::uint32_t host_order);

    bool is_v4() const;
    /// What a limit counts under: an IPv4 address whole, an IPv6 address by its /64 (what one
    /// customer or host is usually given, so one client cannot walk its own block).
    IpAddress limit_key() const;
    /// Room for the text: 39 characters and a NUL ("ffff:...:ffff"; inet_ntop writes an address
    /// with IPv4 inside shorter, and an IPv4-mapped one is written as IPv4).
    static constexpr std::size_t kMaxText = 40;
    /// Text as inet_ntop writes it (an IPv4 address in dotted form), into `out`; its length.
    std::size_t format(char (&out)[kMaxText]) const;
    /// The IPv4 address in host order, or 0 for an IPv6 one (and 0.0.0.0).
    std::uint32_t v4_value() const;
    std::string text() const;

    bool operator==(const IpAddress&) const = default;
};

/// A block of addresses: "10.0.0.0/8", "2001:db8::/32", or one address ("127.0.0.1").
struct AddressRange {
    IpAddress base;
    unsigned prefix = 128;  ///< bits that must match, counted in the 16-byte form

    static std::optional<AddressRange> parse(std::string_view text);
    bool contains(const IpAddress& address) const;
};

/// --trust-proxy's list: empty trusts no one.
class AddressRanges {
public:
    /// "CIDR[,CIDR...]"; nullopt (with `error` set) when one is not an address or a range.
    static std::optional<AddressRanges> parse(std::string_view list, std::string& error);
    bool empty() const { return ranges_.empty(); }
    bool contains(const IpAddress& address) const;
    std::size_t size() const { return ranges_.size(); }

private:
    std::vector<AddressRange> ranges_;
};

}  // namespace cspd
