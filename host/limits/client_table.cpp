#include "limits/client_table.hpp"

#include "common/fnv1a.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace cspd {

namespace {
constexpr std::uint32_t kMagic = 0x6373706c;  // "cspl"
constexpr std::uint32_t kLayout = 1;
constexpr std::size_t kEvictionWalk = 16;  // entries looked at from the old end for one to forget

std::size_t align64(std::size_t n) { return (n + 63) & ~std::size_t(63); }
}  // namespace

// The memfd: this header, then `shards` shards of `shard_bytes` each. A change of any of these
// structs is a new kLayout.
struct ClientTable::Header {
    std::uint32_t magic;
    std::uint32_t layout;
    std::uint32_t shards;
    std::uint32_t per_shard;  // entries in each shard
    std::uint32_t buckets;    // hash chains in each shard, a power of two
    std::uint32_t reserved;
    std::uint64_t shard_bytes;
    std::atomic<std::uint64_t> limited[kLimitKinds];
    std::atomic<std::uint64_t> evictions;
};

struct ClientTable::Entry {
    ClientKey key;            // kind 0: never used
    std::uint32_t next;       // the next entry in its hash chain (1-based; 0: none)
    std::uint32_t newer;      // the LRU list, both ways
    std::uint32_t older;
    std::uint32_t open;       // units held (hold/release)
    std::int64_t tat_ns;      // GCRA: when the bucket is empty again (0: it is)
    std::uint64_t refusals;   // since this key was last forgotten
};

// A shard: this, then `buckets` chain heads, then `per_shard` entries, all by 1-based index.
struct ClientTable::Shard {
    pthread_mutex_t mutex;
    std::uint32_t used;    // entries taken so far (each stays taken: a forgotten key's is reused)
    std::uint32_t newest;  // the LRU list's ends
    std::uint32_t oldest;
};

namespace {

struct View {  // one locked shard's arrays
    std::uint32_t* buckets;
    ClientTable::Entry* entries;  // entries[i - 1] is entry i
    std::uint32_t bucket_mask;
    std::uint32_t capacity;
};

std::uint64_t hash_of(const ClientKey& key) {
    const std::uint64_t h = fnv1a64({reinterpret_cast<const char*>(key.bytes.data()), key.bytes.size()},
                                    kFnv1a64Start ^ std::uint64_t(key.kind));
    return h ^ (h >> 29);  // FNV's low bits are weak: fold the high ones in for the chain's mask
}

void init_mutex(pthread_mutex_t& mutex) {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
}

std::size_t shard_bytes_for(std::uint32_t buckets, std::uint32_t per_shard) {
    return align64(align64(sizeof(ClientTable::Shard)) + buckets * sizeof(std::uint32_t) +
                   per_shard * sizeof(ClientTable::Entry));
}

struct Geometry {
    std::uint32_t shards, per_shard, buckets;
    std::size_t shard_bytes, bytes;
};

Geometry geometry_for(std::size_t entries) {
    if (entries == 0 || entries > (std::size_t(1) << 30)) throw std::invalid_argument("a client table needs 1 to 2^30 entries");
    Geometry g{};
    g.shards = entries >= 4096 ? 64 : 1;
    g.per_shard = std::uint32_t((entries + g.shards - 1) / g.shards);
    g.buckets = std::bit_ceil(g.per_shard);
    g.shard_bytes = shard_bytes_for(g.buckets, g.per_shard);
    g.bytes = align64(sizeof(ClientTable::Header)) + g.shards * g.shard_bytes;
    return g;
}

void* map_table(int fd, std::size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap of the client table");
    return memory;
}

View view_of(ClientTable::Shard& shard, const ClientTable::Header& header) {
    auto* base = reinterpret_cast<unsigned char*>(&shard) + align64(sizeof(ClientTable::Shard));
    auto* buckets = reinterpret_cast<std::uint32_t*>(base);
    auto* entries = reinterpret_cast<ClientTable::Entry*>(base + header.buckets * sizeof(std::uint32_t));
    return {buckets, entries, header.buckets - 1, header.per_shard};
}

/// Forgets every key of a shard whose lock holder died mid-change (its lists may be half made).
void empty_shard(ClientTable::Shard& shard, const View& v) {
    std::memset(v.buckets, 0, (v.bucket_mask + 1) * sizeof(std::uint32_t));
    std::memset(static_cast<void*>(v.entries), 0, std::size_t(v.capacity) * sizeof(ClientTable::Entry));
    shard.used = shard.newest = shard.oldest = 0;
}

ClientTable::Entry& at(const View& v, std::uint32_t i) { return v.entries[i - 1]; }

std::uint32_t find(const View& v, std::uint64_t hash, const ClientKey& key) {
    // Indices are checked against the capacity: the memory is writable by every worker's code.
    for (std::uint32_t i = v.buckets[hash & v.bucket_mask], steps = 0; i && i <= v.capacity && steps <= v.capacity;
         i = at(v, i).next, ++steps)
        if (at(v, i).key == key) return i;
    return 0;
}

void unlink_lru(ClientTable::Shard& shard, const View& v, std::uint32_t i) {
    ClientTable::Entry& e = at(v, i);
    if (e.newer) at(v, e.newer).older = e.older; else shard.newest = e.older;
    if (e.older) at(v, e.older).newer = e.newer; else shard.oldest = e.newer;
    e.newer = e.older = 0;
}

void make_newest(ClientTable::Shard& shard, const View& v, std::uint32_t i) {
    if (shard.newest == i) return;  // the steady case: one busy client
    if (at(v, i).newer || at(v, i).older || shard.oldest == i) unlink_lru(shard, v, i);
    ClientTable::Entry& e = at(v, i);
    e.older = shard.newest;
    if (shard.newest) at(v, shard.newest).newer = i;
    shard.newest = i;
    if (!shard.oldest) shard.oldest = i;
}

void unlink_chain(const View& v, std::uint32_t i) {
    std::uint32_t* link = &v.buckets[hash_of(at(v, i).key) & v.bucket_mask];
    for (std::uint32_t steps = 0; *link && *link <= v.capacity && steps <= v.capacity; link = &at(v, *link).next, ++steps)
        if (*link == i) {
            *link = at(v, i).next;
            return;
        }
}

/// An entry for `key`, found or made (newest either way); 0 when every one holds open work.
std::uint32_t find_or_add(ClientTable::Shard& shard, const View& v, std::uint64_t hash, const ClientKey& key,
                          std::atomic<std::uint64_t>& evictions) {
    std::uint32_t i = find(v, hash, key);
    if (!i) {
        if (shard.used < v.capacity) {
            i = ++shard.used;
        } else {
            i = shard.oldest;
            for (std::size_t steps = 0; i && at(v, i).open != 0; ++steps)
                i = steps < kEvictionWalk ? at(v, i).newer : 0;
            if (!i) return 0;
            unlink_chain(v, i);
            unlink_lru(shard, v, i);
            evictions.fetch_add(1, std::memory_order_relaxed);
        }
        ClientTable::Entry& e = at(v, i);
        e = ClientTable::Entry{};
        e.key = key;
        e.next = v.buckets[hash & v.bucket_mask];
        v.buckets[hash & v.bucket_mask] = i;
    }
    make_newest(shard, v, i);
    return i;
}

}  // namespace

ClientTable ClientTable::create(std::size_t entries) {
    const Geometry g = geometry_for(entries);
    UniqueFd fd(::memfd_create("cspd-clients", MFD_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::system_category(), "memfd_create");
    // Sparse: shards no client reaches take no memory.
    if (::ftruncate(fd.get(), static_cast<off_t>(g.bytes)) != 0)
        throw std::system_error(errno, std::system_category(), "sizing the client table");
    void* memory = map_table(fd.get(), g.bytes);
    auto* header = new (memory) Header{};
    header->magic = kMagic;
    header->layout = kLayout;
    header->shards = g.shards;
    header->per_shard = g.per_shard;
    header->buckets = g.buckets;
    header->shard_bytes = g.shard_bytes;
    ClientTable table(std::move(fd), memory, g.bytes);
    for (std::size_t s = 0; s < g.shards; ++s) init_mutex(table.shard_at(s).mutex);
    return table;
}

ClientTable ClientTable::attach(int fd, std::size_t entries) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    UniqueFd owned(fd);
    const Geometry g = geometry_for(entries);
    struct stat file {};
    if (::fstat(fd, &file) != 0 || static_cast<std::size_t>(file.st_size) != g.bytes)
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not a client table of " + std::to_string(entries) + " entries");
    void* memory = map_table(fd, g.bytes);
    const auto* header = static_cast<const Header*>(memory);
    if (header->magic != kMagic || header->layout != kLayout || header->shards != g.shards ||
        header->per_shard != g.per_shard || header->buckets != g.buckets) {
        ::munmap(memory, g.bytes);
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not a client table of " + std::to_string(entries) + " entries");
    }
    return ClientTable(std::move(owned), memory, g.bytes);
}

ClientTable::ClientTable(UniqueFd fd, void* memory, std::size_t bytes)
    : fd_(std::move(fd)), memory_(memory), bytes_(bytes), header_(static_cast<Header*>(memory)) {}

ClientTable::ClientTable(ClientTable&& other) noexcept
    : fd_(std::move(other.fd_)), memory_(std::exchange(other.memory_, nullptr)), bytes_(other.bytes_),
      header_(std::exchange(other.header_, nullptr)) {}

ClientTable::~ClientTable() {
    if (memory_) ::munmap(memory_, bytes_);
}

ClientTable::Shard& ClientTable::shard_at(std::size_t index) {
    auto* base = static_cast<unsigned char*>(memory_) + align64(sizeof(Header));
    return *reinterpret_cast<Shard*>(base + index * header_->shard_bytes);
}

ClientTable::Shard& ClientTable::lock_shard(std::size_t index) {
    Shard& shard = shard_at(index);
    if (pthread_mutex_lock(&shard.mutex) == EOWNERDEAD) {
        pthread_mutex_consistent(&shard.mutex);
        empty_shard(shard, view_of(shard, *header_));
    }
    return shard;
}

ClientTable::Shard& ClientTable::lock_shard(const ClientKey& key, std::uint64_t& hash) {
    hash = hash_of(key);
    return lock_shard((hash >> 40) % header_->shards);
}

void ClientTable::unlock(Shard& shard) { pthread_mutex_unlock(&shard.mutex); }

ClientTable::Verdict ClientTable::charge(const ClientKey& key, std::int64_t now_ns, std::int64_t interval_ns,
                                         unsigned burst, LimitKind kind) {
    std::uint64_t hash;
    Shard& shard = lock_shard(key, hash);
    const View v = view_of(shard, *header_);
    Verdict verdict;
    if (const std::uint32_t i = find_or_add(shard, v, hash, key, header_->evictions)) {
        Entry& e = at(v, i);
        // Theoretical arrival time: each request moves it one interval on; a burst may run it up
        // to (burst - 1) intervals ahead of now, and no further.
        const std::int64_t tat = std::max(e.tat_ns, now_ns);
        const std::int64_t tolerance = interval_ns * std::int64_t(std::max(burst, 1u) - 1);
        if (tat - now_ns > tolerance) {
            verdict = {false, tat - now_ns - tolerance};
            ++e.refusals;
            header_->limited[std::size_t(kind)].fetch_add(1, std::memory_order_relaxed);
        } else {
            e.tat_ns = tat + interval_ns;
        }
    }
    unlock(shard);
    return verdict;
}

ClientTable::Hold ClientTable::hold(const ClientKey& key, unsigned cap) {
    std::uint64_t hash;
    Shard& shard = lock_shard(key, hash);
    const View v = view_of(shard, *header_);
    Hold result = Hold::untracked;
    if (const std::uint32_t i = find_or_add(shard, v, hash, key, header_->evictions)) {
        Entry& e = at(v, i);
        if (e.open >= cap) {
            ++e.refusals;
            header_->limited[std::size_t(LimitKind::connections)].fetch_add(1, std::memory_order_relaxed);
            result = Hold::refused;
        } else {
            ++e.open;
            result = Hold::held;
        }
    }
    unlock(shard);
    return result;
}

void ClientTable::release(const ClientKey& key) {
    std::uint64_t hash;
    Shard& shard = lock_shard(key, hash);
    const View v = view_of(shard, *header_);
    // Not found: its shard was emptied after a crash; what it held is forgotten with it.
    if (const std::uint32_t i = find(v, hash, key); i && at(v, i).open > 0) --at(v, i).open;
    unlock(shard);
}

unsigned ClientTable::held(const ClientKey& key) {
    std::uint64_t hash;
    Shard& shard = lock_shard(key, hash);
    const View v = view_of(shard, *header_);
    const std::uint32_t i = find(v, hash, key);
    const unsigned open = i ? at(v, i).open : 0;
    unlock(shard);
    return open;
}

std::uint64_t ClientTable::limited(LimitKind kind) const {
    return header_->limited[std::size_t(kind)].load(std::memory_order_relaxed);
}

std::uint64_t ClientTable::evictions() const { return header_->evictions.load(std::memory_order_relaxed); }

std::vector<ClientTable::Refused> ClientTable::most_refused(std::size_t n) {
    std::vector<Refused> found;
    for (std::size_t s = 0; s < header_->shards; ++s) {
        Shard& shard = lock_shard(s);
        const View v = view_of(shard, *header_);
        for (std::uint32_t i = 1; i <= std::min(shard.used, v.capacity); ++i)
            if (at(v, i).key.kind == ClientKey::Kind::address && at(v, i).refusals)
                found.push_back({at(v, i).key, at(v, i).refusals});
        unlock(shard);
    }
    const std::size_t keep = std::min(n, found.size());
    std::partial_sort(found.begin(), found.begin() + keep, found.end(),
                      [](const Refused& a, const Refused& b) { return a.refusals > b.refusals; });
    found.resize(keep);
    return found;
}

}  // namespace cspd
