#include "store/shared_store.hpp"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace cspd {
namespace {

using Result = SharedStore::Result;

/// A store clock the test moves by hand, so expiry needs no waiting.
struct TestClock {
    static inline std::int64_t ms = 0;
    static std::int64_t now() noexcept { return ms; }
    static void at(std::int64_t value) { ms = value; }
};

/// The value under `key`, "<absent>", or "<" the result ">".
std::string get(SharedStore& store, std::string_view key) {
    char out[4096];
    std::size_t size = 0;
    const Result r = store.get(key, out, sizeof out, size);
    if (r == Result::absent) return "<absent>";
    if (r != Result::ok) return "<error " + std::to_string(static_cast<int>(r)) + ">";
    return std::string(out, std::min(size, sizeof out));
}

/// Waits for `child` and gives its exit status, or -1 if it did not exit normally.
int wait_for(pid_t child) {
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// FNV-1a 64, the store's hash: it lets a test pick keys that share a home slot. Were the store
/// to hash otherwise, the keys would merely collide less; the tests would still hold.
std::uint64_t fnv1a(std::string_view key) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    return h;
}

TEST(SharedStore, PutsGetsReplacesAndRemoves) {
    SharedStore store = SharedStore::create({16, 64});
    EXPECT_EQ(store.size(), 0u);
    EXPECT_EQ(get(store, "k"), "<absent>");
    EXPECT_EQ(store.put("k", "v1", 0), Result::ok);
    EXPECT_EQ(get(store, "k"), "v1");
    EXPECT_EQ(store.put("k", "value two", 0), Result::ok);  // replaces
    EXPECT_EQ(get(store, "k"), "value two");
    EXPECT_EQ(store.put("k", "", 0), Result::ok);  // an empty value is a value
    EXPECT_EQ(get(store, "k"), "");
    EXPECT_EQ(store.size(), 1u);
    EXPECT_EQ(store.remove("k"), Result::ok);
    EXPECT_EQ(get(store, "k"), "<absent>");
    EXPECT_EQ(store.remove("k"), Result::absent);
    EXPECT_EQ(store.size(), 0u);
}

TEST(SharedStore, KeysAndValuesAreBinarySafe) {
    SharedStore store = SharedStore::create({16, 64});
    const std::string key("a\0b", 3), value("\0\xff\r\n", 4);
    EXPECT_EQ(store.put(key, value, 0), Result::ok);
    EXPECT_EQ(get(store, key), value);
    EXPECT_EQ(get(store, "a"), "<absent>");  // not a C string
    EXPECT_EQ(get(store, std::string("a\0c", 3)), "<absent>");
}

TEST(SharedStore, ReportsTheWholeSizeToASmallerBuffer) {
    SharedStore store = SharedStore::create({16, 64});
    ASSERT_EQ(store.put("k", "hello world", 0), Result::ok);
    char out[5] = {'x', 'x', 'x', 'x', 'x'};
    std::size_t size = 0;
    EXPECT_EQ(store.get("k", out, 3, size), Result::ok);
    EXPECT_EQ(size, 11u);
    EXPECT_EQ(std::string(out, 5), "helxx");  // nothing past out_size
    size = 0;
    EXPECT_EQ(store.get("k", nullptr, 0, size), Result::ok);  // just ask the size
    EXPECT_EQ(size, 11u);
}

TEST(SharedStore, RefusesEmptyAndLongKeys) {
    SharedStore store = SharedStore::create({16, 64});
    const std::string longest(SharedStore::kKeyMax, 'k'), too_long(SharedStore::kKeyMax + 1, 'k');
    std::size_t size = 0;
    std::int64_t sum = 0;
    for (const std::string& bad : {std::string(), too_long}) {
        EXPECT_EQ(store.put(bad, "v", 0), Result::too_big) << bad.size();
        EXPECT_EQ(store.get(bad, nullptr, 0, size), Result::too_big) << bad.size();
        EXPECT_EQ(store.remove(bad), Result::too_big) << bad.size();
        EXPECT_EQ(store.add(bad, 1, sum), Result::too_big) << bad.size();
    }
    EXPECT_EQ(store.put(longest, "v", 0), Result::ok);
    EXPECT_EQ(get(store, longest), "v");
    EXPECT_EQ(store.size(), 1u);
}

TEST(SharedStore, RefusesValuesOverTheLimit) {
    SharedStore store = SharedStore::create({16, 8});
    EXPECT_EQ(store.put("k", std::string(8, 'v'), 0), Result::ok);
    EXPECT_EQ(store.put("k", std::string(9, 'v'), 0), Result::too_big);
    EXPECT_EQ(get(store, "k"), std::string(8, 'v'));  // the old value stays
}

TEST(SharedStore, FullUntilSomethingIsRemoved) {
    SharedStore store = SharedStore::create({4, 16});
    for (const char* key : {"a", "b", "c", "d"}) ASSERT_EQ(store.put(key, "1", 0), Result::ok) << key;
    std::int64_t sum = 0;
    EXPECT_EQ(store.put("e", "1", 0), Result::full);
    EXPECT_EQ(store.add("e", 1, sum), Result::full);
    EXPECT_EQ(store.put("a", "replaced", 0), Result::ok);  // an existing key still takes a value
    EXPECT_EQ(store.add("b", 2, sum), Result::ok);
    EXPECT_EQ(sum, 3);
    EXPECT_EQ(store.size(), 4u);
    ASSERT_EQ(store.remove("c"), Result::ok);
    EXPECT_EQ(store.put("e", "1", 0), Result::ok);
    EXPECT_EQ(store.put("f", "1", 0), Result::full);
    for (const char* key : {"a", "b", "d", "e"}) EXPECT_NE(get(store, key), "<absent>") << key;
}

TEST(SharedStore, EachWriterHoldsAtMostItsQuota) {
    SharedStore store = SharedStore::create({16, 16, 25});  // 4 entries a writer
    ASSERT_EQ(store.limits().quota(), 4u);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(store.put("a" + std::to_string(i), "1", 0, "alpha"), Result::ok) << i;
    std::int64_t sum = 0;
    EXPECT_EQ(store.put("a4", "1", 0, "alpha"), Result::over_quota);
    EXPECT_EQ(store.add("a4", 1, sum, "alpha"), Result::over_quota);
    EXPECT_EQ(store.put("a0", "rewritten", 0, "alpha"), Result::ok);  // its own entries still take values
    EXPECT_EQ(store.add("a1", 5, sum, "alpha"), Result::ok);
    // Another writer is not held back by the first.
    for (int i = 0; i < 4; ++i) EXPECT_EQ(store.put("b" + std::to_string(i), "1", 0, "beta"), Result::ok) << i;
    // Writes without a writer (the host's own) are not limited.
    for (int i = 0; i < 6; ++i) EXPECT_EQ(store.put("h" + std::to_string(i), "1", 0), Result::ok) << i;
    std::map<std::string, std::pair<std::size_t, std::uint64_t>> use;
    for (const auto& owner : store.owners()) use[owner.name] = {owner.entries, owner.refused};
    EXPECT_EQ(use["alpha"], std::make_pair(std::size_t(4), std::uint64_t(2)));
    EXPECT_EQ(use["beta"], std::make_pair(std::size_t(4), std::uint64_t(0)));
}

TEST(SharedStore, AnEntryIsChargedToItsLastWriterAndFreedWithIt) {
    SharedStore store = SharedStore::create({16, 16, 25});
    for (int i = 0; i < 4; ++i) ASSERT_EQ(store.put("k" + std::to_string(i), "1", 0, "alpha"), Result::ok);
    ASSERT_EQ(store.put("k4", "1", 0, "alpha"), Result::over_quota);
    // beta overwrites one of alpha's keys (keys are server-wide): the charge moves to beta.
    ASSERT_EQ(store.put("k0", "beta's", 0, "beta"), Result::ok);
    EXPECT_EQ(store.put("k4", "1", 0, "alpha"), Result::ok);
    EXPECT_EQ(store.put("k5", "1", 0, "alpha"), Result::over_quota);
    // A removed entry, whoever removes it, gives its writer room again.
    ASSERT_EQ(store.remove("k1"), Result::ok);
    EXPECT_EQ(store.put("k5", "1", 0, "alpha"), Result::ok);
    std::map<std::string, std::size_t> held;
    for (const auto& owner : store.owners()) held[owner.name] = owner.entries;
    EXPECT_EQ(held["alpha"], 4u);
    EXPECT_EQ(held["beta"], 1u);
}

TEST(SharedStore, ExpiredEntriesGiveTheirWriterRoomBack) {
    SharedStore store = SharedStore::create({16, 16, 25});
    store.set_clock(&TestClock::now);
    TestClock::at(1'000'000);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(store.put("t" + std::to_string(i), "1", 1, "alpha"), Result::ok);
    ASSERT_EQ(store.put("t4", "1", 0, "alpha"), Result::over_quota);
    TestClock::at(1'000'999);
    EXPECT_EQ(store.put("t4", "1", 0, "alpha"), Result::over_quota);  // a millisecond before they expire
    TestClock::at(1'001'000);
    EXPECT_EQ(store.put("t4", "1", 0, "alpha"), Result::ok);
}

TEST(SharedStore, AQuotaOfAHundredPercentIsTheWholeStore) {
    SharedStore store = SharedStore::create({4, 16, 100});
    for (const char* key : {"a", "b", "c", "d"}) ASSERT_EQ(store.put(key, "1", 0, "alpha"), Result::ok) << key;
    EXPECT_EQ(store.put("e", "1", 0, "alpha"), Result::full);  // the store's limit says it first
}

TEST(SharedStore, AddCountsFromZeroAndKeepsDecimalText) {
    SharedStore store = SharedStore::create({16, 64});
    std::int64_t sum = 0;
    EXPECT_EQ(store.add("n", 5, sum), Result::ok);
    EXPECT_EQ(sum, 5);
    EXPECT_EQ(store.add("n", -7, sum), Result::ok);
    EXPECT_EQ(sum, -2);
    EXPECT_EQ(get(store, "n"), "-2");
    EXPECT_EQ(store.add("n", 0, sum), Result::ok);
    EXPECT_EQ(sum, -2);
    ASSERT_EQ(store.put("m", "41", 0), Result::ok);
    EXPECT_EQ(store.add("m", 1, sum), Result::ok);
    EXPECT_EQ(sum, 42);
    EXPECT_EQ(get(store, "m"), "42");
    ASSERT_EQ(store.put("z", "-0", 0), Result::ok);
    EXPECT_EQ(store.add("z", 3, sum), Result::ok);
    EXPECT_EQ(sum, 3);
}

TEST(SharedStore, AddRefusesWhatIsNotAnInteger) {
    SharedStore store = SharedStore::create({16, 64});
    std::int64_t sum = 123;
    for (const char* text : {"", "abc", " 1", "1 ", "+1", "1.5", "0x10", "1e3", "--1", "9223372036854775808"}) {
        ASSERT_EQ(store.put("k", text, 0), Result::ok);
        EXPECT_EQ(store.add("k", 1, sum), Result::not_integer) << '"' << text << '"';
        EXPECT_EQ(get(store, "k"), text);  // untouched
    }
    ASSERT_EQ(store.put("k", std::string("1\0", 2), 0), Result::ok);
    EXPECT_EQ(store.add("k", 1, sum), Result::not_integer);
}

TEST(SharedStore, AddRefusesOverflowAndKeepsTheValue) {
    SharedStore store = SharedStore::create({16, 64});
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
    std::int64_t sum = 0;
    ASSERT_EQ(store.add("hi", max, sum), Result::ok);
    EXPECT_EQ(get(store, "hi"), "9223372036854775807");
    EXPECT_EQ(store.add("hi", 1, sum), Result::not_integer);
    EXPECT_EQ(get(store, "hi"), "9223372036854775807");
    ASSERT_EQ(store.add("lo", min, sum), Result::ok);
    EXPECT_EQ(get(store, "lo"), "-9223372036854775808");
    EXPECT_EQ(store.add("lo", -1, sum), Result::not_integer);
    EXPECT_EQ(store.add("lo", max, sum), Result::ok);
    EXPECT_EQ(sum, -1);
}

TEST(SharedStore, AddRefusesAResultLongerThanTheValueLimit) {
    SharedStore store = SharedStore::create({16, 2});
    std::int64_t sum = 0;
    EXPECT_EQ(store.add("k", 99, sum), Result::ok);
    EXPECT_EQ(store.add("k", 1, sum), Result::too_big);  // "100" is 3 bytes
    EXPECT_EQ(get(store, "k"), "99");
}

TEST(SharedStore, EntriesExpireAfterTheirTtl) {
    SharedStore store = SharedStore::create({16, 64});
    SharedStore small = SharedStore::create({2, 16});
    store.set_clock(&TestClock::now);
    small.set_clock(&TestClock::now);
    TestClock::at(5'000);
    std::int64_t sum = 0;
    ASSERT_EQ(store.put("short", "v", 1), Result::ok);
    ASSERT_EQ(store.put("forever", "v", 0), Result::ok);
    ASSERT_EQ(store.put("counter", "5", 1), Result::ok);
    ASSERT_EQ(store.add("counter", 1, sum), Result::ok);  // keeps the 1 s expiry
    ASSERT_EQ(sum, 6);
    ASSERT_EQ(store.add("plain", 1, sum), Result::ok);  // an entry add creates never expires
    ASSERT_EQ(store.put("gone", "v", 1), Result::ok);
    ASSERT_EQ(store.put("recount", "100", 1), Result::ok);
    ASSERT_EQ(small.put("a", "v", 1), Result::ok);
    ASSERT_EQ(small.put("b", "v", 1), Result::ok);
    ASSERT_EQ(small.put("c", "v", 0), Result::full);
    TestClock::at(5'999);
    EXPECT_EQ(get(store, "short"), "v");  // not yet
    EXPECT_EQ(small.put("c", "v", 0), Result::full);

    TestClock::at(6'000);  // one second on

    EXPECT_EQ(get(store, "short"), "<absent>");
    EXPECT_EQ(get(store, "forever"), "v");
    EXPECT_EQ(get(store, "counter"), "<absent>");
    EXPECT_EQ(get(store, "plain"), "1");
    EXPECT_EQ(store.remove("gone"), Result::absent);  // expired counts as absent
    EXPECT_EQ(store.add("recount", 1, sum), Result::ok);  // an expired value counts as 0
    EXPECT_EQ(sum, 1);
    // A full store reclaims its expired entries before it says full.
    EXPECT_EQ(small.put("c", "v", 0), Result::ok);
    EXPECT_EQ(small.put("d", "v", 0), Result::ok);
    EXPECT_EQ(small.size(), 2u);
    EXPECT_EQ(small.put("e", "v", 0), Result::full);
}

TEST(SharedStore, StaysConsistentThroughCollidingInsertsAndRemoves) {
    // 64 entries: a table of 128 slots. Half the keys share four home slots around the table's
    // wrap (126, 127, 0, 1), so runs are long and cross the end; the rest fall anywhere.
    constexpr std::size_t kEntries = 64, kTable = 128, kValueMax = 24;
    SharedStore store = SharedStore::create({kEntries, kValueMax});
    std::vector<std::string> keys;
    for (int i = 0; keys.size() < 60; ++i) {
        const std::string key = "c" + std::to_string(i);
        const std::uint64_t home = fnv1a(key) & (kTable - 1);
        if (home >= kTable - 2 || home <= 1) keys.push_back(key);
    }
    for (int i = 0; i < 60; ++i) keys.push_back("r" + std::to_string(i));

    std::map<std::string, std::string> model;
    const unsigned seed = 20261201;
    std::mt19937 random(seed);
    const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); };
    for (int op = 0; op < 5000; ++op) {
        const std::string& key = keys[pick(keys.size())];
        const bool present = model.count(key) != 0;
        switch (pick(4)) {
        case 0:
        case 1: {
            const std::string value(pick(kValueMax + 1), static_cast<char>('a' + pick(26)));
            const Result expected = present || model.size() < kEntries ? Result::ok : Result::full;
            ASSERT_EQ(store.put(key, value, 0), expected) << "op " << op << " seed " << seed;
            if (expected == Result::ok) model[key] = value;
            break;
        }
        case 2:
            ASSERT_EQ(store.remove(key), present ? Result::ok : Result::absent) << "op " << op << " seed " << seed;
            model.erase(key);
            break;
        default: {
            std::int64_t sum = 0;
            Result expected = Result::ok;
            std::int64_t value = 0;
            if (present) {
                const std::string& text = model[key];
                const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
                if (text.empty() || error != std::errc() || end != text.data() + text.size())
                    expected = Result::not_integer;
            } else if (model.size() >= kEntries) {
                expected = Result::full;
            }
            ASSERT_EQ(store.add(key, 3, sum), expected) << "op " << op << " seed " << seed;
            if (expected == Result::ok) model[key] = std::to_string(value + 3);
            break;
        }
        }
        if (op % 50 == 0 || op == 4999) {
            ASSERT_EQ(store.size(), model.size()) << "op " << op;
            for (const std::string& k : keys) {
                const auto it = model.find(k);
                ASSERT_EQ(get(store, k), it == model.end() ? "<absent>" : it->second) << k << " at op " << op;
            }
        }
    }
}

TEST(SharedStore, RefusesNoEntries) { EXPECT_THROW(SharedStore::create({0, 64}), std::invalid_argument); }

TEST(SharedStore, AttachRefusesOtherLimitsAndOtherFiles) {
    SharedStore store = SharedStore::create({16, 64});
    // attach owns the descriptor it is given, even when it throws: give it copies.
    EXPECT_THROW(SharedStore::attach(::dup(store.fd()), {32, 64}), std::runtime_error);
    EXPECT_THROW(SharedStore::attach(::dup(store.fd()), {8, 64}), std::runtime_error);
    EXPECT_THROW(SharedStore::attach(::dup(store.fd()), {16, 65}), std::runtime_error);
    const int zeros = ::memfd_create("not-a-store", MFD_CLOEXEC);
    ASSERT_GE(zeros, 0);
    ASSERT_EQ(::ftruncate(zeros, 1 << 20), 0);
    EXPECT_THROW(SharedStore::attach(zeros, {16, 64}), std::runtime_error);
    SharedStore same = SharedStore::attach(::dup(store.fd()), {16, 64});
    ASSERT_EQ(store.put("k", "v", 0), Result::ok);
    EXPECT_EQ(get(same, "k"), "v");  // two mappings, one table
}

TEST(SharedStore, MovedFromStoreHasNoEntries) {
    SharedStore store = SharedStore::create({16, 64});
    ASSERT_EQ(store.put("k", "v", 0), Result::ok);
    SharedStore moved(std::move(store));
    EXPECT_EQ(store.size(), 0u);  // NOLINT(bugprone-use-after-move): size() is defined on it
    EXPECT_EQ(moved.size(), 1u);
    EXPECT_EQ(get(moved, "k"), "v");
}

TEST(SharedStore, ChildProcessSharesTheTable) {
    const StoreLimits limits{16, 64};
    SharedStore store = SharedStore::create(limits);
    ASSERT_EQ(store.put("from-parent", "hello", 0), Result::ok);
    ASSERT_EQ(store.put("count", "10", 0), Result::ok);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // As a worker does: its own mapping through the inherited descriptor.
        try {
            SharedStore mine = SharedStore::attach(::dup(store.fd()), limits);
            if (get(mine, "from-parent") != "hello") ::_exit(10);
            std::int64_t sum = 0;
            if (mine.add("count", 5, sum) != Result::ok || sum != 15) ::_exit(11);
            if (mine.put("from-child", "hi", 0) != Result::ok) ::_exit(12);
            if (mine.remove("from-parent") != Result::ok) ::_exit(13);
        } catch (...) {
            ::_exit(14);
        }
        ::_exit(0);
    }
    ASSERT_EQ(wait_for(child), 0);
    EXPECT_EQ(get(store, "count"), "15");
    EXPECT_EQ(get(store, "from-child"), "hi");
    EXPECT_EQ(get(store, "from-parent"), "<absent>");
    EXPECT_EQ(store.size(), 2u);
}

TEST(SharedStore, ChildrenAddConcurrentlyWithoutLosingCounts) {
    const StoreLimits limits{16, 64};
    SharedStore store = SharedStore::create(limits);
    constexpr int kChildren = 4, kAdds = 2000;
    std::vector<pid_t> children;
    for (int i = 0; i < kChildren; ++i) {
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            try {
                SharedStore mine = SharedStore::attach(::dup(store.fd()), limits);
                std::int64_t sum = 0;
                for (int n = 0; n < kAdds; ++n)
                    if (mine.add("hits", 1, sum) != Result::ok) ::_exit(1);
            } catch (...) {
                ::_exit(2);
            }
            ::_exit(0);
        }
        children.push_back(child);
    }
    for (pid_t child : children) EXPECT_EQ(wait_for(child), 0);
    EXPECT_EQ(get(store, "hits"), std::to_string(kChildren * kAdds));
}

// The store's mutex is private. This test reaches it by mirroring the header's layout (version 4,
// checked below), so that a child can die holding it; a test hook in the class would be cleaner.
struct HeaderLayout4 {
    std::uint32_t magic;
    std::uint32_t layout;
    std::uint64_t entries, value_max, table_size, slot_bytes;
    std::uint64_t used;
    std::int64_t last_sweep_ms;
    pthread_mutex_t mutex;
};

TEST(SharedStore, SurvivesAProcessKilledWhileHoldingTheLock) {
    const StoreLimits limits{16, 64};
    SharedStore store = SharedStore::create(limits);
    ASSERT_EQ(store.put("kept", "v", 0), Result::ok);
    ASSERT_EQ(store.put("n", "1", 0), Result::ok);
    void* memory = ::mmap(nullptr, sizeof(HeaderLayout4), PROT_READ | PROT_WRITE, MAP_SHARED, store.fd(), 0);
    ASSERT_NE(memory, MAP_FAILED);
    auto* header = static_cast<HeaderLayout4*>(memory);
    if (header->magic != 0x6373706b || header->layout != 4 || header->entries != limits.entries ||
        header->value_max != limits.value_max || header->used != 2) {
        ::munmap(memory, sizeof(HeaderLayout4));
        FAIL() << "the store's header is no longer layout 4: update HeaderLayout4";
    }

    const pid_t holder = ::fork();
    ASSERT_GE(holder, 0);
    if (holder == 0) {
        if (pthread_mutex_lock(&header->mutex) != 0) ::_exit(1);
        ::raise(SIGKILL);  // dies holding the lock
        ::_exit(2);
    }
    ASSERT_EQ(wait_for(holder), -1);

    // A second child sees the owner's death (and, not marking it consistent, leaves it so).
    const pid_t probe = ::fork();
    ASSERT_GE(probe, 0);
    if (probe == 0) ::_exit(pthread_mutex_trylock(&header->mutex) == EOWNERDEAD ? 0 : 1);
    ASSERT_EQ(wait_for(probe), 0) << "the holder did not die holding the store's lock";

    // The next user repairs the table and carries on; the lock works normally after.
    EXPECT_EQ(get(store, "kept"), "v");
    std::int64_t sum = 0;
    EXPECT_EQ(store.add("n", 1, sum), Result::ok);
    EXPECT_EQ(sum, 2);
    EXPECT_EQ(store.put("new", "x", 0), Result::ok);
    EXPECT_EQ(store.size(), 3u);
    EXPECT_EQ(pthread_mutex_trylock(&header->mutex), 0);
    EXPECT_EQ(pthread_mutex_unlock(&header->mutex), 0);
    ::munmap(memory, sizeof(HeaderLayout4));
}

}  // namespace
}  // namespace cspd
