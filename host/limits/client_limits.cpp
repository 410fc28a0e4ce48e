#include "limits/client_limits.hpp"

#include "common/fnv1a.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace cspd {
namespace {

constexpr double kNsPerSecond = 1e9;

ClientKey address_key(const IpAddress& client) {
    return {ClientKey::Kind::address, client.limit_key().bytes};
}

// One request a year is the slowest rate taken: a slower one (or 1e-300) would overflow the
// interval, and is that one.
constexpr double kSlowestPerSecond = 1.0 / (365.0 * 86400.0);

std::int64_t interval_for(double per_second) {
    if (!(per_second > 0)) return 0;
    return std::max<std::int64_t>(1, std::llround(kNsPerSecond / std::max(per_second, kSlowestPerSecond)));
}

}  // namespace

unsigned ClientLimitsConfig::effective_burst() const {
    if (burst) return burst;
    return unsigned(std::clamp(std::ceil(rate), 1.0, 1e6));
}

std::optional<double> parse_rate(std::string_view text) {
    double per = 1;
    if (const std::size_t slash = text.find('/'); slash != std::string_view::npos) {
        const std::string_view unit = text.substr(slash + 1);
        if (unit == "s") per = 1;
        else if (unit == "m") per = 60;
        else return std::nullopt;
        text = text.substr(0, slash);
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || !(value > 0) || !std::isfinite(value))
        return std::nullopt;
    return value / per;
}

unsigned retry_after_seconds(std::int64_t wait_ns) {
    const std::int64_t seconds = (wait_ns + std::int64_t(kNsPerSecond) - 1) / std::int64_t(kNsPerSecond);
    return unsigned(std::clamp<std::int64_t>(seconds, 1, 1 << 30));
}

ClientLimits::ClientLimits(const ClientLimitsConfig& config, ClientTable& table, unsigned holder)
    : config_(config), table_(table), interval_ns_(interval_for(config.rate)), burst_(config.effective_burst()),
      holder_(holder), lease_(std::clamp(burst_ / 8, 1u, 64u)) {}

unsigned ClientLimits::charge_request(const IpAddress& client, std::int64_t now_ns) {
    if (!interval_ns_) return 0;
    const ClientTable::Verdict verdict =
        table_.charge(address_key(client), now_ns, interval_ns_, burst_, LimitKind::rate);
    return verdict.allowed ? 0 : retry_after_seconds(verdict.wait_ns);
}

unsigned ClientLimits::charge_ahead(const IpAddress& key, std::int64_t now_ns, unsigned& taken) {
    taken = 1;
    if (!interval_ns_) return 0;
    std::int64_t wait_ns = 0;
    // Ahead only while half the burst would stay in the bucket: near its limit, a client's
    // requests are charged one at a time.
    taken = table_.charge_some({ClientKey::Kind::address, key.bytes}, now_ns, interval_ns_, burst_, lease_, burst_ / 2,
                               LimitKind::rate, wait_ns);
    return taken ? 0 : retry_after_seconds(wait_ns);
}

void ClientLimits::refund(const IpAddress& key, unsigned requests) {
    if (interval_ns_ && requests) table_.refund({ClientKey::Kind::address, key.bytes}, interval_ns_ * requests);
}

unsigned ClientLimits::charge_key(std::string_view handler, std::string_view key, double per_second, unsigned burst,
                                  std::int64_t now_ns) {
    const std::int64_t interval = interval_for(per_second);
    if (!interval) return 0;
    // 128 bits of two differently seeded FNV-1a runs over "handler\0key": keys of different
    // handlers never share a bucket, and two keys of one handler share one by chance only.
    ClientKey k{ClientKey::Kind::handler, {}};
    std::string joined(handler);
    joined.push_back('\0');
    joined.append(key);
    const std::uint64_t a = fnv1a64(joined), b = fnv1a64(joined, kFnv1a64Start ^ 0x9e3779b97f4a7c15ull);
    std::memcpy(k.bytes.data(), &a, 8);
    std::memcpy(k.bytes.data() + 8, &b, 8);
    const ClientTable::Verdict verdict = table_.charge(k, now_ns, interval, std::max(burst, 1u), LimitKind::handler);
    return verdict.allowed ? 0 : retry_after_seconds(verdict.wait_ns);
}

bool ClientLimits::hold(const IpAddress& client, bool& held) {
    held = false;
    if (!config_.connections) return true;
    switch (table_.hold(address_key(client), config_.connections, holder_)) {
    case ClientTable::Hold::held: held = true; return true;
    case ClientTable::Hold::refused: return false;
    case ClientTable::Hold::untracked: return true;
    }
    return true;
}

void ClientLimits::release(const IpAddress& client) { table_.release(address_key(client), holder_); }

}  // namespace cspd
