// The toolkit's csp_kv_* calls: the shared store (store/shared_store), each entry charged to
// the handler that wrote it, a refusal said in the log now and then.
#include "common/clocks.hpp"
#include "common/one_line.hpp"
#include "handler/host_services.hpp"
#include "handler/sdk_bridge.hpp"
#include "handler/sdk_toolkit.hpp"
#include "limits/client_limits.hpp"
#include "store/shared_store.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <new>

namespace cspd {
namespace {

/// `minor`: the 2.x the handler was built against; a handler that does not know CSP_KV_QUOTA is
/// told CSP_KV_FULL, the failure it knows.
int kv_code(SharedStore::Result result, unsigned minor = CSP_ABI_MINOR) {
    switch (result) {
    case SharedStore::Result::ok: return 0;
    case SharedStore::Result::absent: return CSP_KV_ABSENT;
    case SharedStore::Result::full: return CSP_KV_FULL;
    case SharedStore::Result::over_quota: return minor >= 3 ? CSP_KV_QUOTA : CSP_KV_FULL;
    case SharedStore::Result::too_big: return CSP_KV_TOO_BIG;
    case SharedStore::Result::not_integer: return CSP_KV_NOT_INTEGER;
    }
    return CSP_KV_UNAVAILABLE;
}

/// The store charges an entry to the handler that wrote it.
std::string_view owner_of(const HandlerRequestView& view) {
    return view.version() ? std::string_view(view.version()->name()) : std::string_view();
}
unsigned minor_of(const HandlerRequestView& view) { return view.version() ? view.version()->minor() : 0; }

/// A store that refused a write says so in the log, at most once every 10 s per process.
void report_refusal(const HandlerRequestView& view, SharedStore::Result result, std::string_view key) {
    if (result != SharedStore::Result::full && result != SharedStore::Result::not_integer &&
        result != SharedStore::Result::over_quota)
        return;
    static std::atomic<std::int64_t> next_ns{0};
    const std::int64_t now = coarse_monotonic_now_ns();
    std::int64_t due = next_ns.load(std::memory_order_relaxed);
    if (now < due || !next_ns.compare_exchange_strong(due, now + 10'000'000'000)) return;
    std::string safe;
    const std::string name = view.version() ? view.version()->describe() : std::string("?");
    const StoreLimits& limits = host_services().store->limits();
    if (result == SharedStore::Result::full)
        spdlog::warn("handler {}: the shared store is full (--kv-entries {}): key \"{}\" not stored", name,
                     limits.entries, one_line(key, safe));
    else if (result == SharedStore::Result::over_quota)
        spdlog::warn("handler {}: holds its whole share of the shared store (--kv-quota {}% of --kv-entries {}: {} "
                     "entries): key \"{}\" not stored",
                     name, limits.quota_percent, limits.entries, limits.quota(), one_line(key, safe));
    else
        spdlog::warn("handler {}: csp_kv_add on key \"{}\", which does not hold a decimal int64 (or overflowed)",
                     name, one_line(key, safe));
}

}  // namespace

int ToolkitApi::kv_get(const csp_request*, const char* key, size_t key_size, void* out, size_t out_size,
                       size_t* value_size) noexcept {
    SharedStore* store = host_services().store;
    if (!store) return CSP_KV_UNAVAILABLE;
    if (!key || (!out && out_size)) return CSP_KV_TOO_BIG;
    std::size_t size = 0;
    try {
        const SharedStore::Result result = store->get({key, key_size}, out, out_size, size);
        if (value_size) *value_size = result == SharedStore::Result::ok ? size : 0;
        return kv_code(result);
    } catch (const std::bad_alloc&) {
        return CSP_KV_TOO_BIG;
    }
}

int ToolkitApi::kv_put(const csp_request* req, const char* key, size_t key_size, const void* value,
                       size_t value_size, unsigned ttl_seconds) noexcept {
    SharedStore* store = host_services().store;
    if (!store) return CSP_KV_UNAVAILABLE;
    if (!key || (!value && value_size)) return CSP_KV_TOO_BIG;
    try {
        const HandlerRequestView& view = HandlerRequestView::of(req);
        const auto result = store->put({key, key_size}, {static_cast<const char*>(value), value_size}, ttl_seconds,
                                       owner_of(view));
        report_refusal(view, result, {key, key_size});
        return kv_code(result, minor_of(view));
    } catch (const std::bad_alloc&) {
        return CSP_KV_TOO_BIG;
    }
}

int ToolkitApi::kv_delete(const csp_request*, const char* key, size_t key_size) noexcept {
    SharedStore* store = host_services().store;
    if (!store) return CSP_KV_UNAVAILABLE;
    if (!key) return CSP_KV_TOO_BIG;
    return kv_code(store->remove({key, key_size}));
}

int ToolkitApi::kv_add(const csp_request* req, const char* key, size_t key_size, int64_t delta,
                       int64_t* result) noexcept {
    SharedStore* store = host_services().store;
    if (!store) return CSP_KV_UNAVAILABLE;
    if (!key || !result) return CSP_KV_TOO_BIG;
    std::int64_t sum = 0;
    const HandlerRequestView& view = HandlerRequestView::of(req);
    const auto outcome = store->add({key, key_size}, delta, sum, owner_of(view));
    report_refusal(view, outcome, {key, key_size});
    if (outcome == SharedStore::Result::ok) *result = sum;
    return kv_code(outcome, minor_of(view));
}

unsigned ToolkitApi::limit(const csp_request* req, const char* key, size_t key_size, double rate_per_s,
                           unsigned burst) noexcept {
    ClientLimits* limits = host_services().client_limits;
    if (!limits || !req || (!key && key_size)) return 0;
    try {
        return limits->charge_key(owner_of(HandlerRequestView::of(req)), {key ? key : "", key_size}, rate_per_s, burst,
                                  coarse_monotonic_now_ns());
    } catch (const std::bad_alloc&) {
        return 0;  // no memory for the key: let it in rather than refuse for the host's own lack
    }
}

}  // namespace cspd
