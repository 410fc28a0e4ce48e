#include "limits/client_table.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace cspd {

namespace {
constexpr std::uint32_t kMagic = 0x6373706c;  // "cspl"
constexpr std::uint32_t kLayout = 3;

std::size_t align64(std::size_t n) { return (n + 63) & ~std::size_t(63); }

/// a + b, or the largest value short of overflow.
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t sum;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() / 2 : sum;
}
}  // namespace

// The memfd: this header, then `shards` shards of `shard_bytes` each. A change of any of these
// structs is a new kLayout. Every process reads the geometry once, checked, at create or attach:
// the memory is writable by handler code, and a value scribbled here must not send a worker
// out of bounds.
struct ClientTable::Header {
    std::uint32_t magic;
    std::uint32_t layout;
    std::uint32_t shards;
    std::uint32_t per_shard;  // entries in each shard
    std::uint32_t buckets;    // hash chains in each shard, a power of two
    std::uint32_t reserved;
    std::uint64_t shard_bytes;
    std::uint64_t seed;  // the hash's
    std::atomic<std::uint64_t> limited[kLimitKinds];
    std::atomic<std::uint64_t> evictions;
};

// An entry holding open work is out of the LRU list: only idle ones can be forgotten, and the
// oldest idle one always can.
struct ClientTable::Entry {
    ClientKey key;             // kind 0: never used
    std::uint32_t next;        // the next entry in its hash chain (1-based; 0: none)
    std::uint32_t newer;       // the LRU list, both ways
    std::uint32_t older;
    std::uint32_t open;        // units held, by all holders
    std::int64_t tat_ns;       // GCRA: when the bucket is empty again (0: it is)
    std::uint64_t refusals;    // since this key was last forgotten
    std::uint16_t open_by[kHolders];  // units held by each holder (a worker: forgotten when it dies)
};

// A shard: this, then `buckets` chain heads, then `per_shard` entries, all by 1-based index.
struct ClientTable::Shard {
    pthread_mutex_t mutex;
    std::uint32_t used;    // entries taken so far (each stays taken: a forgotten key's is reused)
    std::uint32_t newest;  // the LRU list's ends (idle entries only)
    std::uint32_t oldest;
};

namespace {

struct View {  // one locked shard's arrays
    ClientTable::Shard& shard;
    std::uint32_t* buckets;
    ClientTable::Entry* entries;  // entries[i - 1] is entry i
    std::uint32_t bucket_mask;
    std::uint32_t capacity;
    std::uint64_t seed;

    bool valid(std::uint32_t i) const { return i >= 1 && i <= capacity; }
    ClientTable::Entry& at(std::uint32_t i) const { return entries[i - 1]; }
};

std::uint64_t hash_of(const ClientKey& key, std::uint64_t seed) {
    // A few multiplications and shifts (splitmix64's finaliser over both halves): every bit of the
    // key reaches the bits that pick the shard and the chain. The seed is random per table, so
    // no one can choose addresses that fall in one chain in advance.
    std::uint64_t a, b;
    std::memcpy(&a, key.bytes.data(), 8);
    std::memcpy(&b, key.bytes.data() + 8, 8);
    std::uint64_t h = (a ^ seed ^ std::uint64_t(key.kind)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 31) ^ b) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

View view_of(ClientTable::Shard& shard, const ClientTable::Geometry& g, std::uint64_t seed) {
    auto* base = reinterpret_cast<unsigned char*>(&shard) + align64(sizeof(ClientTable::Shard));
    auto* buckets = reinterpret_cast<std::uint32_t*>(base);
    auto* entries = reinterpret_cast<ClientTable::Entry*>(base + g.buckets * sizeof(std::uint32_t));
    return {shard, buckets, entries, g.buckets - 1, g.per_shard, seed};
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

ClientTable::Geometry geometry_for(std::size_t entries) {
    if (entries == 0 || entries > (std::size_t(1) << 30)) throw std::invalid_argument("a client table needs 1 to 2^30 entries");
    ClientTable::Geometry g{};
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

/// Forgets every key of a shard whose lock holder died mid-change, or whose lists are not sane.
void empty_shard(const View& v) {
    std::memset(v.buckets, 0, (std::size_t(v.bucket_mask) + 1) * sizeof(std::uint32_t));
    std::memset(static_cast<void*>(v.entries), 0, std::size_t(v.capacity) * sizeof(ClientTable::Entry));
    v.shard.used = v.shard.newest = v.shard.oldest = 0;
}

std::uint32_t find(const View& v, std::uint64_t hash, const ClientKey& key) {
    for (std::uint32_t i = v.buckets[hash & v.bucket_mask], steps = 0; v.valid(i) && steps <= v.capacity;
         i = v.at(i).next, ++steps)
        if (v.at(i).key == key) return i;
    return 0;
}

/// Takes entry `i` out of the LRU list (if it is in it); false if the links are not sane.
bool unlink_lru(const View& v, std::uint32_t i) {
    ClientTable::Entry& e = v.at(i);
    const bool listed = e.newer || e.older || v.shard.oldest == i;
    if (!listed) return true;
    if ((e.newer && !v.valid(e.newer)) || (e.older && !v.valid(e.older))) return false;
    if (e.newer) v.at(e.newer).older = e.older; else v.shard.newest = e.older;
    if (e.older) v.at(e.older).newer = e.newer; else v.shard.oldest = e.newer;
    e.newer = e.older = 0;
    return true;
}

/// Puts idle entry `i` at the LRU list's newest end; false if the links are not sane.
bool make_newest(const View& v, std::uint32_t i) {
    if (v.shard.newest == i) return true;  // the steady case: one busy client
    if (!unlink_lru(v, i) || (v.shard.newest && !v.valid(v.shard.newest))) return false;
    ClientTable::Entry& e = v.at(i);
    e.older = v.shard.newest;
    if (v.shard.newest) v.at(v.shard.newest).newer = i;
    v.shard.newest = i;
    if (!v.shard.oldest) v.shard.oldest = i;
    return true;
}

void unlink_chain(const View& v, std::uint32_t i) {
    std::uint32_t* link = &v.buckets[hash_of(v.at(i).key, v.seed) & v.bucket_mask];
    for (std::uint32_t steps = 0; v.valid(*link) && steps <= v.capacity; link = &v.at(*link).next, ++steps)
        if (*link == i) {
            *link = v.at(i).next;
            return;
        }
}

/// An entry for `key`, found or made (an idle one is made newest); 0 when every entry of the
/// shard holds open work (or the shard had to be emptied).
std::uint32_t find_or_add(const View& v, std::uint64_t hash, const ClientKey& key, std::atomic<std::uint64_t>& evictions) {
    std::uint32_t i = find(v, hash, key);
    if (!i) {
        if (v.shard.used < v.capacity) {
            i = ++v.shard.used;
        } else {
            i = v.shard.oldest;  // idle, or it would not be listed
            if (!i) return 0;
            if (!v.valid(i) || v.at(i).open != 0) {
                empty_shard(v);
                return 0;
            }
            unlink_chain(v, i);
            if (!unlink_lru(v, i)) {
                empty_shard(v);
                return 0;
            }
            evictions.fetch_add(1, std::memory_order_relaxed);
        }
        ClientTable::Entry& e = v.at(i);
        e = ClientTable::Entry{};
        e.key = key;
        e.next = v.buckets[hash & v.bucket_mask];
        v.buckets[hash & v.bucket_mask] = i;
    }
    if (v.at(i).open == 0 && !make_newest(v, i)) {
        empty_shard(v);
        return 0;
    }
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
    if (::getrandom(&header->seed, sizeof header->seed, GRND_NONBLOCK) != sizeof header->seed)
        header->seed = std::uint64_t(::getpid()) * 0x9e3779b97f4a7c15ull ^ std::uint64_t(::time(nullptr));
    ClientTable table(std::move(fd), memory, g);
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
        header->per_shard != g.per_shard || header->buckets != g.buckets || header->shard_bytes != g.shard_bytes) {
        ::munmap(memory, g.bytes);
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not a client table of " + std::to_string(entries) + " entries");
    }
    return ClientTable(std::move(owned), memory, g);
}

ClientTable::ClientTable(UniqueFd fd, void* memory, const Geometry& geometry)
    : fd_(std::move(fd)), memory_(memory), geometry_(geometry), header_(static_cast<Header*>(memory)),
      seed_(header_->seed) {}

ClientTable::ClientTable(ClientTable&& other) noexcept
    : fd_(std::move(other.fd_)), memory_(std::exchange(other.memory_, nullptr)), geometry_(other.geometry_),
      header_(std::exchange(other.header_, nullptr)), seed_(other.seed_) {}

ClientTable::~ClientTable() {
    if (memory_) ::munmap(memory_, geometry_.bytes);
}

ClientTable::Shard& ClientTable::shard_at(std::size_t index) {
    auto* base = static_cast<unsigned char*>(memory_) + align64(sizeof(Header));
    return *reinterpret_cast<Shard*>(base + index * geometry_.shard_bytes);
}

ClientTable::Shard* ClientTable::lock_shard(std::size_t index) {
    Shard& shard = shard_at(index);
    const int locked = pthread_mutex_lock(&shard.mutex);
    if (locked == EOWNERDEAD) {
        pthread_mutex_consistent(&shard.mutex);
        empty_shard(view_of(shard, geometry_, seed_));
    } else if (locked != 0) {
        return nullptr;  // not a mutex any more (scribbled on): count nothing here
    }
    // Sane ends, or forget the shard: a link out of bounds would write past it.
    if (shard.used > geometry_.per_shard || shard.newest > shard.used || shard.oldest > shard.used)
        empty_shard(view_of(shard, geometry_, seed_));
    return &shard;
}

ClientTable::Shard* ClientTable::lock_shard(const ClientKey& key, std::uint64_t& hash) {
    hash = hash_of(key, seed_);
    return lock_shard((hash >> 40) % geometry_.shards);
}

void ClientTable::unlock(Shard& shard) { pthread_mutex_unlock(&shard.mutex); }

ClientTable::Verdict ClientTable::charge(const ClientKey& key, std::int64_t now_ns, std::int64_t interval_ns,
                                         unsigned burst, LimitKind kind) {
    Verdict verdict;
    verdict.allowed = charge_some(key, now_ns, interval_ns, burst, 1, 0, kind, verdict.wait_ns) > 0;
    return verdict;
}

unsigned ClientTable::charge_some(const ClientKey& key, std::int64_t now_ns, std::int64_t interval_ns, unsigned burst,
                                  unsigned want, unsigned keep, LimitKind kind, std::int64_t& wait_ns) {
    wait_ns = 0;
    std::uint64_t hash;
    Shard* shard = lock_shard(key, hash);
    if (!shard) return 1;
    const View v = view_of(*shard, geometry_, seed_);
    unsigned taken = 1;  // an entry the table cannot keep: let the request in
    if (const std::uint32_t i = find_or_add(v, hash, key, header_->evictions)) {
        Entry& e = v.at(i);
        // Theoretical arrival time: each request moves it one interval on; a burst may run it up
        // to (burst - 1) intervals ahead of now, and no further.
        const std::int64_t tat = std::max(e.tat_ns, now_ns);
        std::int64_t tolerance;
        if (__builtin_mul_overflow(interval_ns, std::int64_t(std::max(burst, 1u) - 1), &tolerance))
            tolerance = std::numeric_limits<std::int64_t>::max() / 2;
        if (tat - now_ns > tolerance) {
            taken = 0;
            wait_ns = tat - now_ns - tolerance;
            ++e.refusals;
            header_->limited[std::size_t(kind)].fetch_add(1, std::memory_order_relaxed);
        } else {
            // Requests the bucket lets in now: this one and (room / interval) more.
            const std::int64_t room = (tolerance - (tat - now_ns)) / interval_ns;
            taken = want > 1 && room >= std::int64_t(want) - 1 + std::int64_t(keep) ? want : 1;
            std::int64_t cost;
            if (__builtin_mul_overflow(interval_ns, std::int64_t(taken), &cost)) cost = interval_ns, taken = 1;
            e.tat_ns = saturating_add(tat, cost);
        }
    }
    unlock(*shard);
    return taken;
}

void ClientTable::refund(const ClientKey& key, std::int64_t ns) {
    std::uint64_t hash;
    Shard* shard = lock_shard(key, hash);
    if (!shard) return;
    const View v = view_of(*shard, geometry_, seed_);
    // Not found: forgotten since, and a forgotten key's bucket is full anyway.
    if (const std::uint32_t i = find(v, hash, key)) v.at(i).tat_ns = std::max<std::int64_t>(0, v.at(i).tat_ns - ns);
    unlock(*shard);
}

ClientTable::Hold ClientTable::hold(const ClientKey& key, unsigned cap, unsigned holder) {
    std::uint64_t hash;
    Shard* shard = lock_shard(key, hash);
    if (!shard) return Hold::untracked;
    const View v = view_of(*shard, geometry_, seed_);
    Hold result = Hold::untracked;
    if (const std::uint32_t i = find_or_add(v, hash, key, header_->evictions)) {
        Entry& e = v.at(i);
        std::uint16_t& mine = e.open_by[holder % kHolders];
        if (e.open >= cap) {
            ++e.refusals;
            header_->limited[std::size_t(LimitKind::connections)].fetch_add(1, std::memory_order_relaxed);
            result = Hold::refused;
        } else if (mine == std::numeric_limits<std::uint16_t>::max() || !unlink_lru(v, i)) {
            result = Hold::untracked;  // past what one holder counts (65,535): let in, uncounted
        } else {
            ++mine;
            ++e.open;
            result = Hold::held;
        }
    }
    unlock(*shard);
    return result;
}

void ClientTable::release(const ClientKey& key, unsigned holder) {
    std::uint64_t hash;
    Shard* shard = lock_shard(key, hash);
    if (!shard) return;
    const View v = view_of(*shard, geometry_, seed_);
    // Not found: its shard was emptied after a crash; what it held is forgotten with it.
    if (const std::uint32_t i = find(v, hash, key)) {
        Entry& e = v.at(i);
        std::uint16_t& mine = e.open_by[holder % kHolders];
        if (mine > 0 && e.open > 0) {
            --mine;
            if (--e.open == 0 && !make_newest(v, i)) empty_shard(v);  // idle again: it may be forgotten
        }
    }
    unlock(*shard);
}

void ClientTable::forget_holder(unsigned holder) {
    for (std::size_t s = 0; s < geometry_.shards; ++s) {
        Shard* shard = lock_shard(s);
        if (!shard) continue;
        const View v = view_of(*shard, geometry_, seed_);
        for (std::uint32_t i = 1; i <= shard->used; ++i) {
            Entry& e = v.at(i);
            std::uint16_t& units = e.open_by[holder % kHolders];
            if (!units) continue;
            e.open -= std::min<std::uint32_t>(e.open, units);
            units = 0;
            if (e.open == 0 && e.key.kind != ClientKey::Kind{} && !make_newest(v, i)) {
                empty_shard(v);
                break;
            }
        }
        unlock(*shard);
    }
}

unsigned ClientTable::held(const ClientKey& key) {
    std::uint64_t hash;
    Shard* shard = lock_shard(key, hash);
    if (!shard) return 0;
    const View v = view_of(*shard, geometry_, seed_);
    const std::uint32_t i = find(v, hash, key);
    const unsigned open = i ? v.at(i).open : 0;
    unlock(*shard);
    return open;
}

std::uint64_t ClientTable::limited(LimitKind kind) const {
    return header_->limited[std::size_t(kind)].load(std::memory_order_relaxed);
}

std::uint64_t ClientTable::evictions() const { return header_->evictions.load(std::memory_order_relaxed); }

std::vector<ClientTable::Refused> ClientTable::most_refused(std::size_t n) {
    std::vector<Refused> found;
    for (std::size_t s = 0; s < geometry_.shards; ++s) {
        Shard* shard = lock_shard(s);
        if (!shard) continue;
        const View v = view_of(*shard, geometry_, seed_);
        for (std::uint32_t i = 1; i <= shard->used; ++i)
            if (v.at(i).key.kind == ClientKey::Kind::address && v.at(i).refusals)
                found.push_back({v.at(i).key, v.at(i).refusals});
        unlock(*shard);
    }
    const std::size_t keep = std::min(n, found.size());
    std::partial_sort(found.begin(), found.begin() + keep, found.end(),
                      [](const Refused& a, const Refused& b) { return a.refusals > b.refusals; });
    found.resize(keep);
    return found;
}

}  // namespace cspd
