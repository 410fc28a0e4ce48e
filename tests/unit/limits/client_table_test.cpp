#include "limits/client_leases.hpp"
#include "limits/client_limits.hpp"
#include "limits/client_table.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace cspd {
namespace {

constexpr std::int64_t kMs = 1'000'000;

ClientKey key_of(const char* address) { return {ClientKey::Kind::address, IpAddress::parse(address)->bytes}; }

TEST(ClientTable, LetsABurstThroughThenOneRequestPerInterval) {
    ClientTable table = ClientTable::create(1024);
    const ClientKey a = key_of("192.0.2.1");
    const std::int64_t t0 = 1000 * kMs, interval = 10 * kMs;  // 100 a second
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(table.charge(a, t0, interval, 20, LimitKind::rate).allowed) << i;
    const auto refused = table.charge(a, t0, interval, 20, LimitKind::rate);
    EXPECT_FALSE(refused.allowed);
    EXPECT_EQ(refused.wait_ns, interval);  // the next one fits one interval later
    EXPECT_FALSE(table.charge(a, t0 + interval - 1, interval, 20, LimitKind::rate).allowed);
    EXPECT_TRUE(table.charge(a, t0 + interval, interval, 20, LimitKind::rate).allowed);
    // Over one second at the rate, exactly 100 more get in, whatever the spacing of the tries.
    int allowed = 0;
    for (std::int64_t t = t0 + interval + kMs / 4; t <= t0 + interval + 1000 * kMs; t += kMs / 4)
        allowed += table.charge(a, t, interval, 20, LimitKind::rate).allowed;
    EXPECT_EQ(allowed, 100);
    EXPECT_EQ(table.limited(LimitKind::rate), 2u + (4000u - 100u));  // 4,000 tries in that second
    // An idle key is full again after burst intervals.
    const std::int64_t later = t0 + 5000 * kMs;
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(table.charge(a, later, interval, 20, LimitKind::rate).allowed) << i;
    EXPECT_FALSE(table.charge(a, later, interval, 20, LimitKind::rate).allowed);
}

TEST(ClientTable, SaysHowLongToWaitAccurately) {
    ClientTable table = ClientTable::create(64);
    const ClientKey a = key_of("192.0.2.1");
    const std::int64_t t0 = 7 * kMs, minute = 60'000 * kMs;  // one a minute, a burst of 2
    EXPECT_TRUE(table.charge(a, t0, minute, 2, LimitKind::rate).allowed);
    EXPECT_TRUE(table.charge(a, t0, minute, 2, LimitKind::rate).allowed);
    const auto refused = table.charge(a, t0 + 15'000 * kMs, minute, 2, LimitKind::rate);
    ASSERT_FALSE(refused.allowed);
    EXPECT_EQ(refused.wait_ns, 45'000 * kMs);
    EXPECT_EQ(retry_after_seconds(refused.wait_ns), 45u);
    EXPECT_EQ(retry_after_seconds(1), 1u);
    EXPECT_EQ(retry_after_seconds(1'000'000'001), 2u);
    EXPECT_EQ(retry_after_seconds(0), 1u);
}

TEST(ClientTable, KeepsEachKeyApart) {
    ClientTable table = ClientTable::create(1024);
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    EXPECT_TRUE(table.charge(key_of("192.0.2.1"), t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_FALSE(table.charge(key_of("192.0.2.1"), t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_TRUE(table.charge(key_of("192.0.2.2"), t0, interval, 1, LimitKind::rate).allowed);
    ClientKey handler = key_of("192.0.2.1");
    handler.kind = ClientKey::Kind::handler;  // the same bytes as a handler's key: another bucket
    EXPECT_TRUE(table.charge(handler, t0, interval, 1, LimitKind::handler).allowed);
}

TEST(ClientTable, ForgetsTheLeastRecentlyUsedAndCountsIt) {
    ClientTable table = ClientTable::create(64);  // one shard of 64
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    for (std::uint32_t i = 0; i < 64; ++i)
        EXPECT_TRUE(table.charge({ClientKey::Kind::address, IpAddress::v4(0x0a000000 + i).bytes}, t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_EQ(table.evictions(), 0u);
    // 10.0.0.0 is used again: 10.0.0.1 is the oldest now, and goes first.
    const ClientKey first{ClientKey::Kind::address, IpAddress::v4(0x0a000000).bytes};
    EXPECT_FALSE(table.charge(first, t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_TRUE(table.charge(key_of("192.0.2.99"), t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_EQ(table.evictions(), 1u);
    EXPECT_FALSE(table.charge(first, t0, interval, 1, LimitKind::rate).allowed);  // still remembered
    const ClientKey second{ClientKey::Kind::address, IpAddress::v4(0x0a000001).bytes};
    EXPECT_TRUE(table.charge(second, t0, interval, 1, LimitKind::rate).allowed);  // forgotten: a full bucket
}

TEST(ClientTable, NeverForgetsAKeyThatHoldsOpenWorkAndForgetsAnIdleOneInstead) {
    ClientTable table = ClientTable::create(64);
    // 63 keys hold a connection each: only one entry is idle, and it is forgotten for each new key.
    for (std::uint32_t i = 0; i < 63; ++i)
        ASSERT_EQ(table.hold({ClientKey::Kind::address, IpAddress::v4(0x0a000000 + i).bytes}, 5, 0), ClientTable::Hold::held);
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    for (std::uint32_t i = 0; i < 10; ++i)
        EXPECT_TRUE(table.charge({ClientKey::Kind::address, IpAddress::v4(0x0b000000 + i).bytes}, t0, interval, 1, LimitKind::rate).allowed);
    EXPECT_EQ(table.evictions(), 9u);
    EXPECT_EQ(table.held({ClientKey::Kind::address, IpAddress::v4(0x0a000000).bytes}), 1u);
    // The last entry taken too: nothing idle is left to forget, and a new key goes untracked.
    ASSERT_EQ(table.hold(key_of("192.0.2.1"), 5, 0), ClientTable::Hold::held);
    EXPECT_EQ(table.hold(key_of("192.0.2.2"), 5, 0), ClientTable::Hold::untracked);
    // One let go is idle again, and the next new key takes its place.
    table.release({ClientKey::Kind::address, IpAddress::v4(0x0a000005).bytes}, 0);
    EXPECT_EQ(table.hold(key_of("192.0.2.2"), 5, 0), ClientTable::Hold::held);
    EXPECT_EQ(table.held({ClientKey::Kind::address, IpAddress::v4(0x0a000005).bytes}), 0u);
}

TEST(ClientTable, ForgetsWhatAHolderThatDiedHeld) {
    ClientTable table = ClientTable::create(1024);
    const ClientKey a = key_of("192.0.2.1");
    for (int i = 0; i < 3; ++i) ASSERT_EQ(table.hold(a, 5, 7), ClientTable::Hold::held);  // worker at slot 7
    ASSERT_EQ(table.hold(a, 5, 9), ClientTable::Hold::held);                              // worker at slot 9
    EXPECT_EQ(table.held(a), 4u);
    table.forget_holder(7);  // it died: its three connections went with it
    EXPECT_EQ(table.held(a), 1u);
    table.release(a, 7);  // a late release from the dead holder's number changes nothing
    EXPECT_EQ(table.held(a), 1u);
    table.release(a, 9);
    EXPECT_EQ(table.held(a), 0u);
}

TEST(ClientTable, CapsOpenWorkPerKey) {
    ClientTable table = ClientTable::create(1024);
    const ClientKey a = key_of("192.0.2.1");
    for (int i = 0; i < 3; ++i) EXPECT_EQ(table.hold(a, 3, 0), ClientTable::Hold::held);
    EXPECT_EQ(table.hold(a, 3, 0), ClientTable::Hold::refused);
    EXPECT_EQ(table.held(a), 3u);
    EXPECT_EQ(table.hold(key_of("192.0.2.2"), 3, 0), ClientTable::Hold::held);
    table.release(a, 0);
    EXPECT_EQ(table.hold(a, 3, 0), ClientTable::Hold::held);
    EXPECT_EQ(table.limited(LimitKind::connections), 1u);
    for (int i = 0; i < 5; ++i) table.release(a, 0);  // more releases than holds: it stays at zero
    EXPECT_EQ(table.held(a), 0u);
}

TEST(ClientTable, ListsTheAddressesRefusedMost) {
    ClientTable table = ClientTable::create(1024);
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    const char* addresses[] = {"192.0.2.1", "192.0.2.2", "192.0.2.3"};
    for (int n = 0; n < 3; ++n)
        for (int i = 0; i <= (n + 1) * 2; ++i) table.charge(key_of(addresses[n]), t0, interval, 1, LimitKind::rate);
    const auto most = table.most_refused(2);
    ASSERT_EQ(most.size(), 2u);
    EXPECT_EQ(IpAddress{most[0].key.bytes}.text(), "192.0.2.3");
    EXPECT_EQ(most[0].refusals, 6u);
    EXPECT_EQ(IpAddress{most[1].key.bytes}.text(), "192.0.2.2");
    EXPECT_EQ(most[1].refusals, 4u);
}

TEST(ClientTable, IsOneTableForEveryProcessThatMapsIt) {
    ClientTable table = ClientTable::create(4096);  // 64 shards
    const ClientKey a = key_of("192.0.2.1");
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // A worker maps the master's table by its descriptor.
        ClientTable mapped = ClientTable::attach(::dup(table.fd()), 4096);
        int allowed = 0;
        for (int i = 0; i < 10; ++i) allowed += mapped.charge(a, t0, interval, 10, LimitKind::rate).allowed;
        ::_exit(allowed == 10 && mapped.hold(a, 2, 1) == ClientTable::Hold::held ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_FALSE(table.charge(a, t0, interval, 10, LimitKind::rate).allowed);  // the child spent the burst
    EXPECT_EQ(table.held(a), 1u);
    EXPECT_THROW(ClientTable::attach(::dup(table.fd()), 1024), std::runtime_error);  // another size
}

TEST(ClientLimits, ParsesRates) {
    EXPECT_DOUBLE_EQ(*parse_rate("100"), 100);
    EXPECT_DOUBLE_EQ(*parse_rate("100/s"), 100);
    EXPECT_DOUBLE_EQ(*parse_rate("600/m"), 10);
    EXPECT_DOUBLE_EQ(*parse_rate("0.5"), 0.5);
    for (const char* bad : {"", "0", "-1", "10/h", "x", "10/", "nan", "inf"}) EXPECT_FALSE(parse_rate(bad)) << bad;
}

TEST(ClientLimits, KeysHandlersApartAndCountsThem) {
    ClientTable table = ClientTable::create(1024);
    ClientLimits limits(ClientLimitsConfig{}, table);
    EXPECT_EQ(limits.charge_request(*IpAddress::parse("192.0.2.1"), kMs), 0u);  // no --client-rate: never
    EXPECT_EQ(limits.charge_key("api", "user-1", 1, 1, kMs), 0u);
    EXPECT_EQ(limits.charge_key("api", "user-1", 1, 1, kMs), 1u);
    EXPECT_EQ(limits.charge_key("other", "user-1", 1, 1, kMs), 0u);  // another handler's bucket
    EXPECT_EQ(limits.charge_key("api", "user-2", 1, 1, kMs), 0u);
    EXPECT_EQ(limits.charge_key("api", "user-1", 0, 1, kMs), 0u);  // no rate: no limit
    EXPECT_EQ(table.limited(LimitKind::handler), 1u);
}

TEST(ClientLimits, CountsAnIPv6ClientByItsSlash64) {
    ClientTable table = ClientTable::create(1024);
    ClientLimitsConfig config;
    config.rate = 1;
    config.burst = 2;
    config.connections = 1;
    ClientLimits limits(config, table);
    EXPECT_EQ(limits.charge_request(*IpAddress::parse("2001:db8:0:1::1"), kMs), 0u);
    EXPECT_EQ(limits.charge_request(*IpAddress::parse("2001:db8:0:1::2"), kMs), 0u);
    EXPECT_EQ(limits.charge_request(*IpAddress::parse("2001:db8:0:1:ffff::3"), kMs), 1u);
    EXPECT_EQ(limits.charge_request(*IpAddress::parse("2001:db8:0:2::1"), kMs), 0u);
    bool held = false;
    EXPECT_TRUE(limits.hold(*IpAddress::parse("2001:db8:0:1::1"), held));
    EXPECT_TRUE(held);
    EXPECT_FALSE(limits.hold(*IpAddress::parse("2001:db8:0:1::9"), held));
    limits.release(*IpAddress::parse("2001:db8:0:1::1"));
    EXPECT_TRUE(limits.hold(*IpAddress::parse("2001:db8:0:1::9"), held));
}

TEST(ClientLimits, AUnitGivesItsHoldBackOnceWhereverItWasMoved) {
    ClientTable table = ClientTable::create(1024);
    ClientLimitsConfig config;
    config.connections = 2;
    ClientLimits limits(config, table);
    const IpAddress client = *IpAddress::parse("192.0.2.7");
    bool held = false;
    ASSERT_TRUE(limits.hold(client, held));
    ASSERT_TRUE(held);
    {
        ClientUnit first(limits, client);
        ClientUnit moved = std::move(first);  // the call's, then the conversation's
        ClientUnit again;
        again = std::move(moved);
        EXPECT_FALSE(first);
        EXPECT_FALSE(moved);
        EXPECT_TRUE(again);
        ASSERT_TRUE(limits.hold(client, held));  // the second of two
        EXPECT_FALSE(limits.hold(client, held));
        limits.release(client);
    }
    // The unit went once: one more fits again, and only one.
    EXPECT_TRUE(limits.hold(client, held));
    EXPECT_TRUE(limits.hold(client, held));
    EXPECT_FALSE(limits.hold(client, held));
}

TEST(ClientTable, TakesSeveralAtOnceOnlyWhileTheBucketKeepsEnough) {
    ClientTable table = ClientTable::create(64);
    const ClientKey a = key_of("192.0.2.1");
    const std::int64_t t0 = kMs, interval = 1000 * kMs;
    std::int64_t wait = 0;
    unsigned total = 0;
    std::vector<unsigned> takes;
    // A burst of 64: 8 at a time while 32 would stay, then one at a time, then none.
    for (unsigned taken; (taken = table.charge_some(a, t0, interval, 64, 8, 32, LimitKind::rate, wait)) > 0;) {
        takes.push_back(taken);
        total += taken;
    }
    EXPECT_EQ(total, 64u);  // never more than the bucket holds
    EXPECT_EQ(std::vector<unsigned>(takes.begin(), takes.begin() + 4), (std::vector<unsigned>{8, 8, 8, 8}));
    EXPECT_EQ(takes.size(), 4u + 32u);
    EXPECT_EQ(wait, interval);
}

TEST(ClientLeases, LetInExactlyTheBurstFromOneLoop) {
    ClientTable table = ClientTable::create(1024);
    ClientLimitsConfig config;
    config.rate = 1.0 / 3600;  // nothing comes back during the test
    config.burst = 80;         // 10 at a time while 40 stay
    ClientLimits limits(config, table);
    ClientLeases loop(limits);
    const IpAddress a = *IpAddress::parse("192.0.2.1"), b = *IpAddress::parse("192.0.2.2");
    int allowed_a = 0, allowed_b = 0;
    for (int i = 0; i < 200; ++i) {
        allowed_a += loop.charge_request(a) == 0;
        allowed_b += loop.charge_request(b) == 0;  // interleaved, in another lease slot or the same
    }
    // Taken ahead or not, every request let in was paid for, and what one client held when the
    // other took its slot went back: exactly the burst each.
    EXPECT_EQ(allowed_a, 80);
    EXPECT_EQ(allowed_b, 80);
    EXPECT_GT(loop.charge_request(a), 3000u);  // about an hour to wait
    // 200 clients in 64 slots, round robin: each takes slots from others all the time.
    std::vector<int> allowed(200);
    for (int round = 0; round < 100; ++round)
        for (std::uint32_t c = 0; c < 200; ++c) allowed[c] += loop.charge_request(IpAddress::v4(0x0a000000 + c)) == 0;
    for (std::uint32_t c = 0; c < 200; ++c) EXPECT_EQ(allowed[c], 80) << c;
}

}  // namespace
}  // namespace cspd
