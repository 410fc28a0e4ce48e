#include "http/forwarded_for.hpp"

#include "common/ascii.hpp"

namespace cspd {
namespace {

/// Walks the comma-separated `list` from its right end, giving each trimmed item to `visit`
/// until it returns false.
template <class Visit>
void each_from_right(std::string_view list, Visit&& visit) {
    while (true) {
        const std::size_t comma = list.rfind(',');
        const std::string_view item = trim_ows(comma == std::string_view::npos ? list : list.substr(comma + 1));
        if (!visit(item) || comma == std::string_view::npos) return;
        list = list.substr(0, comma);
    }
}

/// The for= parameter of one Forwarded element ("for=192.0.2.60;proto=http"); empty if none.
std::string_view for_parameter(std::string_view element) {
    while (!element.empty()) {
        const std::size_t semicolon = element.find(';');
        const std::string_view pair = trim_ows(element.substr(0, semicolon));
        if (pair.size() > 4 && iequals(pair.substr(0, 4), "for=")) return pair.substr(4);
        if (semicolon == std::string_view::npos) break;
        element = element.substr(semicolon + 1);
    }
    return {};
}

/// The walk over one header's entries, right to left; `entry_of` turns an item into what
/// forwarded_address reads.
template <class EntryOf>
std::optional<IpAddress> walk(std::span<const HttpHeader> headers, std::string_view name, const AddressRanges& trusted,
                              EntryOf&& entry_of) {
    std::optional<IpAddress> reached;  // the left-most address walked so far
    bool done = false;
    // Several lines of one field are one list, in order (RFC 9110 §5.3): the last line is its right end.
    for (auto line = headers.rbegin(); line != headers.rend() && !done; ++line) {
        if (!iequals(line->name, name)) continue;
        each_from_right(line->value, [&](std::string_view item) {
            if (item.empty()) return true;  // "a,,b": an empty element is allowed and means nothing
            const std::optional<IpAddress> address = forwarded_address(entry_of(item));
            if (!address) {
                done = true;
                return false;
            }
            reached = address;
            if (!trusted.contains(*address)) {
                done = true;
                return false;
            }
            return true;
        });
    }
    return reached;
}

}  // namespace

std::optional<IpAddress> forwarded_address(std::string_view entry) {
    if (entry.size() >= 2 && entry.front() == '"' && entry.back() == '"') entry = entry.substr(1, entry.size() - 2);
    if (entry.empty()) return std::nullopt;
    if (entry.front() == '[') {  // "[2001:db8::1]" or "[2001:db8::1]:4711"
        const std::size_t close = entry.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        const std::string_view after = entry.substr(close + 1);
        if (!after.empty() && after.front() != ':') return std::nullopt;
        const std::optional<IpAddress> address = IpAddress::parse(entry.substr(1, close - 1));
        return address && !address->is_v4() ? address : std::nullopt;
    }
    if (std::optional<IpAddress> address = IpAddress::parse(entry)) return address;
    // "192.0.2.1:8080": one colon is an IPv4 address with its port (an IPv6 one has two or more).
    const std::size_t colon = entry.find(':');
    if (colon != std::string_view::npos && entry.find(':', colon + 1) == std::string_view::npos) {
        const std::optional<IpAddress> address = IpAddress::parse(entry.substr(0, colon));
        if (address && address->is_v4()) return address;
    }
    return std::nullopt;
}

std::optional<IpAddress> ProxyTrust::client_behind(const IpAddress& peer, const HttpRequest& request) const {
    if (!trusts(peer)) return std::nullopt;
    return forwarded_client(request, *this);
}

std::optional<IpAddress> forwarded_client(const HttpRequest& request, const ProxyTrust& trust) {
    if (trust.header == ForwardedHeader::x_forwarded_for)
        return walk(request.headers, "x-forwarded-for", trust.peers, [](std::string_view item) { return item; });
    return walk(request.headers, "forwarded", trust.peers, for_parameter);
}

}  // namespace cspd
