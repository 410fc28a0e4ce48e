// The reply cache (SDK csp_reply_cache, G-WAN's cacheadd): a handler's reply kept in memory for N
// seconds, so later GET and HEAD requests for the same Host, path and query are answered without
// calling it. One per event loop (shared nothing; a worker's --cache-size is split between its
// loops), least recently used entries evicted first.
//
// What is never cached: a reply with Set-Cookie; a reply to a request that carried Cookie or
// Authorization, unless the handler varies on that header (csp_reply_cache_vary: the header's
// values are then part of the key); a streamed reply; a 206, a 304 or a 5xx; a reply to a HEAD
// (the handler may have left its body out) or to a request with a body.
// A new version of the handler (or its removal) purges its entries.
#pragma once

#include "http/request.hpp"
#include "routing/answer_compression.hpp"
#include "http/response_fields.hpp"
#include "http/status.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct csp_request;

namespace cspd {

class HandlerReply;
class HandlerVersion;
struct LoopSlot;

struct CachedReply {
    HttpStatus status = HttpStatus::ok;
    std::string content_type;
    ResponseFields fields;
    std::string body;
    bool compress = true;  ///< the handler left compression on (csp_reply_compress)
    /// Its body in each coding (by ContentCoding), made by the first hit that asked for it, so
    /// that no hit compresses again; counted with the entry (ReplyCache::grew).
    mutable EncodedBodies encoded;
};

class ReplyCache {
public:
    /// `max_bytes` 0: nothing is ever cached.
    explicit ReplyCache(std::size_t max_bytes);
    ReplyCache(const ReplyCache&) = delete;
    ReplyCache& operator=(const ReplyCache&) = delete;

    /// Hits and misses are counted in `slot` from now on.
    void attach_stats(LoopSlot& slot) { slot_ = &slot; }

    /// Whether any handler on this loop has cached a reply: when not, lookups cost one branch.
    bool in_use() const { return !handlers_.empty(); }

    /// The reply cached for this GET or HEAD to `version`, or null (counted as a miss when the
    /// handler caches). `path` is decoded, `query` raw, as the handler sees them.
    const CachedReply* find(const HandlerVersion& version, std::string_view path, std::string_view query,
                            const HttpRequest& request, std::int64_t now_ns);

    /// After a call answered `status` to a GET or HEAD: keeps the reply if it asked to be kept
    /// and may be. `request` is the handler's view of the request.
    void store(const HandlerVersion& version, const csp_request& request, const HandlerReply& reply,
               HttpStatus status, std::int64_t now_ns);

    /// Drops `handler`'s entries (it was replaced or removed).
    void forget(std::string_view handler);

    /// A hit's entry grew by `more` bytes of compressed bodies (CachedReply::encoded counts them).
    /// They are counted here, and make room at the next store, not before: the hit is being sent.
    void grew(std::size_t more);

    std::size_t bytes() const { return bytes_; }
    std::size_t entries() const { return lru_.size(); }

private:
    struct Entry;
    struct Handler;
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    struct Entry {
        CachedReply reply;
        std::int64_t expires_ns = 0;
        std::size_t bytes = 0;
        Handler* handler = nullptr;
        std::list<Entry*>::iterator lru;
        const std::string* key = nullptr;
    };
    /// One handler's entries, for the version that made them, and the headers they vary on.
    struct Handler {
        std::uint64_t sequence = 0;
        std::vector<std::string> vary;
        std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries;
    };

    /// The key for a request: Host, path, query, and every value of each `vary` header.
    template <class ValuesOf>
    const std::string& key_for(std::string_view host, std::string_view path, std::string_view query, const std::vector<std::string>& vary,
                               ValuesOf values_of);
    void erase(Entry& entry);
    void clear(Handler& handler);

    std::size_t max_bytes_, max_entry_bytes_;
    std::size_t bytes_ = 0;
    std::unordered_map<std::string, Handler, Hash, std::equal_to<>> handlers_;
    std::list<Entry*> lru_;  // most recently used first
    std::string key_;        // reused: a hit allocates nothing
    LoopSlot* slot_ = nullptr;
};

}  // namespace cspd
