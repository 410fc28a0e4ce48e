#include "routing/reply_cache.hpp"

#include "common/ascii.hpp"
#include "handler/sdk_bridge.hpp"
#include "handler/version.hpp"
#include "stats/shared_stats.hpp"

#include <algorithm>

namespace cspd {
namespace {

bool varies_on(const std::vector<std::string>& vary, std::string_view name) {
    return std::any_of(vary.begin(), vary.end(), [&](const std::string& v) { return iequals(v, name); });
}

/// A request whose answer may depend on who asks is cached only if the key says who asked.
template <class HeaderOf>
bool personal_and_not_varied(const std::vector<std::string>& vary, HeaderOf header_of) {
    for (std::string_view name : {std::string_view("cookie"), std::string_view("authorization")})
        if (header_of(name).data() && !varies_on(vary, name)) return true;
    return false;
}

}  // namespace

ReplyCache::ReplyCache(std::size_t max_bytes)
    : max_bytes_(max_bytes), max_entry_bytes_(std::max<std::size_t>(max_bytes / 8, 1)) {}

template <class ValuesOf>
const std::string& ReplyCache::key_for(std::string_view host, std::string_view path, std::string_view query,
                                       const std::vector<std::string>& vary, ValuesOf values_of) {
    // NUL between the parts: a decoded path may hold '?', but never NUL (the decoder refuses %00),
    // and a Host holds neither. The Host is always part of the key: a handler may answer each
    // name differently (and one that echoes it must not hand one client's Host to another).
    key_.assign(host);
    key_.push_back('\0');
    key_.append(path);
    key_.push_back('\0');
    key_.append(query);
    for (const std::string& name : vary) {
        key_.push_back('\0');
        // Every value of the header, in order: two Cookie headers are not the first one alone.
        values_of(name, [&](std::string_view value) { key_.push_back('\1'), key_.append(value); });
    }
    return key_;
}

const CachedReply* ReplyCache::find(const HandlerVersion& version, std::string_view path, std::string_view query,
                                    const HttpRequest& request, std::int64_t now_ns) {
    const auto it = handlers_.find(std::string_view(version.name()));
    if (it == handlers_.end()) return nullptr;
    Handler& handler = it->second;
    if (handler.sequence != version.sequence()) {  // a new version: what the old one said is gone
        clear(handler);
        handlers_.erase(it);
        return nullptr;
    }
    const auto header_of = [&](std::string_view name) { return request.header(name); };
    if (personal_and_not_varied(handler.vary, header_of)) return nullptr;
    const auto values_of = [&](std::string_view name, auto&& take) {
        for (const HttpHeader& h : request.headers)
            if (iequals(h.name, name)) take(h.value);
    };
    const std::string_view host = trim_ows(request.header("host"));
    const auto found = handler.entries.find(std::string_view(key_for(host, path, query, handler.vary, values_of)));
    if (found == handler.entries.end() || found->second.expires_ns <= now_ns) {
        if (found != handler.entries.end()) erase(found->second);
        if (slot_) bump(slot_->cache_misses);
        return nullptr;
    }
    Entry& entry = found->second;
    lru_.splice(lru_.begin(), lru_, entry.lru);
    if (slot_) bump(slot_->cache_hits);
    return &entry.reply;
}

void ReplyCache::store(const HandlerVersion& version, const csp_request& request, const HandlerReply& reply,
                       HttpStatus status, std::int64_t now_ns) {
    // A 206 or a 304 is this request's answer, not the resource's.
    if (max_bytes_ == 0 || reply.cache_seconds() == 0 || code(status) >= 500 || status == HttpStatus::partial_content ||
        status == HttpStatus::not_modified)
        return;
    if (reply.fields().contains("set-cookie")) return;
    const auto header_of = [&](std::string_view name) {
        const csp_str value = request.api->request_header(&request, name.data(), name.size());
        return std::string_view(value.data, value.size);
    };
    const std::vector<std::string>& vary = reply.cache_vary();
    if (personal_and_not_varied(vary, header_of)) return;
    const auto values_of = [&](std::string_view name, auto&& take) {
        csp_str n, v;
        for (size_t i = 0; request.api->request_header_at(&request, i, &n, &v) == 0; ++i)
            if (iequals({n.data, n.size}, name)) take(std::string_view(v.data, v.size));
    };
    const std::size_t bytes = sizeof(Entry) + reply.body().size() + reply.fields().bytes() +
                              reply.content_type().size() + request.path.size + request.query.size + header_of("host").size() + 64;
    if (bytes > max_entry_bytes_) return;

    auto [it, fresh] = handlers_.try_emplace(version.name());
    Handler& handler = it->second;
    if (!fresh && handler.sequence > version.sequence()) return;  // a late answer of a replaced version
    if (!fresh && (handler.sequence != version.sequence() || handler.vary != vary)) clear(handler);
    handler.sequence = version.sequence();
    handler.vary = vary;
    const std::string& key = key_for(trim_ows(header_of("host")), {request.path.data, request.path.size},
                                     {request.query.data, request.query.size}, vary, values_of);
    if (auto old = handler.entries.find(std::string_view(key)); old != handler.entries.end()) erase(old->second);
    while (bytes_ + bytes > max_bytes_ && !lru_.empty()) erase(*lru_.back());

    auto [slot, inserted] = handler.entries.try_emplace(key);
    Entry& entry = slot->second;
    entry.reply = {status, std::string(reply.content_type()), reply.fields(), std::string(reply.body()),
                   reply.compress(), {}};
    entry.expires_ns = now_ns + std::int64_t(reply.cache_seconds()) * 1'000'000'000;
    entry.bytes = bytes;
    entry.handler = &handler;
    entry.key = &slot->first;
    lru_.push_front(&entry);
    entry.lru = lru_.begin();
    bytes_ += bytes;
    if (slot_) slot_->cache_bytes.store(bytes_, std::memory_order_relaxed);
}

void ReplyCache::forget(std::string_view name) {
    const auto it = handlers_.find(name);
    if (it == handlers_.end()) return;
    clear(it->second);
    handlers_.erase(it);
}

void ReplyCache::grew(std::size_t more) {
    bytes_ += more;
    if (slot_) slot_->cache_bytes.store(bytes_, std::memory_order_relaxed);
}

void ReplyCache::erase(Entry& entry) {
    bytes_ -= entry.bytes + entry.reply.encoded.bytes;
    lru_.erase(entry.lru);
    Handler& handler = *entry.handler;
    handler.entries.erase(handler.entries.find(std::string_view(*entry.key)));
    if (slot_) slot_->cache_bytes.store(bytes_, std::memory_order_relaxed);
}

void ReplyCache::clear(Handler& handler) {
    while (!handler.entries.empty()) erase(handler.entries.begin()->second);
}

}  // namespace cspd
