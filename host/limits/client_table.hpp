// What each client has done lately, shared by every process of a server: per key, a request
// bucket and the work it holds open (connections, HTTP/2 streams, WebSockets). A memfd the top
// process makes and every worker maps, as the store is, so a limit holds for the host, not per
// worker or loop.
//
// The bucket is GCRA (the generic cell rate algorithm of ATM networks, as in redis-cell and
// Envoy's quota): one timestamp per key, the theoretical arrival time of its next request, so a
// check is exact at any rate and costs a comparison. Bounded: past `entries` keys, the least
// recently used one holding nothing open is forgotten (and counted). Sharded: a key's shard has
// its own process-shared robust mutex, so loops of different workers rarely wait for one another;
// a process that dies holding one leaves that shard emptied, not wedged.
#pragma once

#include "common/unique_fd.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cspd {

/// What a count is kept under: a client's address (its limit_key()), or a key a handler names.
struct ClientKey {
    enum class Kind : std::uint8_t { address = 1, handler = 2 };
    Kind kind = Kind::address;
    std::array<std::uint8_t, 16> bytes{};
    bool operator==(const ClientKey&) const = default;
};

/// Which limit refused: the labels of cspd_client_limited_total.
enum class LimitKind : std::uint8_t { rate = 0, connections = 1, handler = 2 };
inline constexpr std::size_t kLimitKinds = 3;

class ClientTable {
public:
    /// Room for `entries` keys (at least 1). Throws on failure.
    static ClientTable create(std::size_t entries);
    /// Maps the table at `fd`, made by create(entries) in the top process. Throws if it is not one.
    static ClientTable attach(int fd, std::size_t entries);
    ClientTable(ClientTable&& other) noexcept;
    ClientTable& operator=(ClientTable&&) = delete;
    ~ClientTable();

    int fd() const { return fd_.get(); }

    struct Verdict {
        bool allowed = true;
        std::int64_t wait_ns = 0;  ///< refused: how long until one more request would be allowed
    };
    /// One request of `key` at `now_ns` (CLOCK_MONOTONIC, the same in every process), at one
    /// request per `interval_ns` after a burst of `burst`. A refusal is counted under `kind`.
    Verdict charge(const ClientKey& key, std::int64_t now_ns, std::int64_t interval_ns, unsigned burst, LimitKind kind);
    /// As charge(), but `want` requests at once when the bucket would keep `keep` more after
    /// them (else one): how many it took (0: refused, `wait_ns` set). A loop keeps what it took
    /// past the first for its next requests of `key` (ClientLeases).
    unsigned charge_some(const ClientKey& key, std::int64_t now_ns, std::int64_t interval_ns, unsigned burst,
                         unsigned want, unsigned keep, LimitKind kind, std::int64_t& wait_ns);

    /// Who holds units: each process serving (its first loop slot, below 64), so that what a
    /// worker held goes when it dies (forget_holder), however it died.
    static constexpr unsigned kHolders = 64;
    /// Gives `key` back `ns` of its bucket (requests charge_some took and no one used).
    void refund(const ClientKey& key, std::int64_t ns);

    enum class Hold { held, refused, untracked };
    /// One more unit of open work for `key`, charged to `holder`, if it holds fewer than `cap` in
    /// all: held (release() it later), refused (counted), or untracked when every entry of its
    /// shard holds open work (let in).
    Hold hold(const ClientKey& key, unsigned cap, unsigned holder);
    /// Gives back a unit hold() returned `held` for.
    void release(const ClientKey& key, unsigned holder);
    /// Everything `holder` held (a worker that died, or one about to start in its place).
    void forget_holder(unsigned holder);
    /// Open units `key` holds now (for tests and /-/status).
    unsigned held(const ClientKey& key);

    std::uint64_t limited(LimitKind kind) const;
    std::uint64_t evictions() const;

    struct Refused {
        ClientKey key;
        std::uint64_t refusals = 0;
    };
    /// The `n` address keys refused most since they were last forgotten, most first.
    std::vector<Refused> most_refused(std::size_t n);

    struct Header;
    struct Shard;
    struct Entry;
    struct Geometry {
        std::uint32_t shards, per_shard, buckets;
        std::size_t shard_bytes, bytes;
    };

private:
    ClientTable(UniqueFd fd, void* memory, const Geometry& geometry);
    /// The shard of `key` (its hash into `hash`), locked, or null when its lock is not one any
    /// more (count nothing); unlock it with unlock().
    Shard* lock_shard(const ClientKey& key, std::uint64_t& hash);
    Shard* lock_shard(std::size_t index);
    void unlock(Shard& shard);
    Shard& shard_at(std::size_t index);

    UniqueFd fd_;
    void* memory_ = nullptr;
    Geometry geometry_{};  // checked at create or attach, never read from the shared memory again
    Header* header_ = nullptr;
    std::uint64_t seed_ = 0;
};

}  // namespace cspd
