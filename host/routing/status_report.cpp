#include "routing/status_report.hpp"

#include "routing/prometheus_text.hpp"
#include "routing/protocol_report.hpp"

#include "routing/without_paths.hpp"

#include "routing/tls_status.hpp"
#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"
#include "limits/client_limits.hpp"
#include "store/shared_store.hpp"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

namespace cspd {
namespace {

const char* const kClasses[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

/// One handler name, summed over the slots that know it.
struct HandlerSummary {
    VersionInfo newest{};  // the most recently loaded version any running loop reports
    bool live = false;     // some running loop serves it
    std::int64_t vetting_since_unix_ms = 0;  // a newer file is being vetted (the earliest start)
    std::string refusal;
    std::uint64_t requests[5]{}, errors = 0, latency[kLatencyBuckets]{}, latency_sum_ns = 0, loads = 0, refusals = 0,
                                 crashes = 0, slow_calls = 0, rollbacks = 0;
    bool quarantined = false;
    std::optional<QuarantineEntry> rolled_back_from;  // the quarantined version the live one replaced again
};

// By ContentCoding - 1, as LoopSlot::compressed_responses counts them.
constexpr const char* kCodingNames[3] = {"gzip", "br", "zstd"};

struct Summary {
    std::uint64_t requests[5]{}, open_connections = 0, accepted = 0, replies_owed = 0, blocking_busy = 0, blocking_queued = 0,
                  blocking_refused = 0, cache_hits = 0, cache_misses = 0, cache_bytes = 0, access_log_dropped = 0;
    std::uint64_t compressed[3]{}, compression_in = 0, compression_out = 0;
    std::uint64_t tls_handshakes[std::size_t(TlsVersion::count)]{}, tls_resumed = 0,
        tls_failures[std::size_t(TlsFailure::count)]{};
    std::map<std::string, HandlerSummary, std::less<>> handlers;
};

Summary summarize(const SharedStats& stats) {
    Summary sum;
    const unsigned slots = std::min(stats.slot_count.load(std::memory_order_relaxed), kMaxSlots);
    for (unsigned s = 0; s < slots; ++s) {
        const LoopSlot& slot = stats.slots[s];
        const bool running = slot.pid.load(std::memory_order_relaxed) != 0;
        for (unsigned c = 0; c < 5; ++c) sum.requests[c] += read(slot.requests[c]);
        sum.accepted += read(slot.accepted_connections);
        // A dead worker's connections are gone; its counters stay (they are history).
        sum.blocking_refused += read(slot.blocking_refused);
        sum.cache_hits += read(slot.cache_hits);
        sum.cache_misses += read(slot.cache_misses);
        for (std::size_t c = 0; c < 3; ++c) sum.compressed[c] += read(slot.compressed_responses[c]);
        sum.compression_in += read(slot.compression_bytes_in);
        sum.compression_out += read(slot.compression_bytes_out);
        sum.access_log_dropped += read(slot.access_log_dropped);
        for (std::size_t v = 0; v < std::size_t(TlsVersion::count); ++v) sum.tls_handshakes[v] += read(slot.tls_handshakes[v]);
        sum.tls_resumed += read(slot.tls_resumed);
        for (std::size_t f = 0; f < std::size_t(TlsFailure::count); ++f) sum.tls_failures[f] += read(slot.tls_failures[f]);
        if (running) {
            sum.cache_bytes += read(slot.cache_bytes);
            sum.open_connections += read(slot.open_connections);
            sum.replies_owed += read(slot.replies_owed);
            sum.blocking_busy += read(slot.blocking_busy);
            sum.blocking_queued += read(slot.blocking_queued);
        }
        for (const HandlerStats& entry : slot.handlers()) {
            const std::uint32_t use = entry.in_use.load(std::memory_order_acquire);
            if (use == kStatsNeverUsed) break;  // claimed in order
            if (use == kStatsRetired) continue;
            VersionInfo info = snapshot(entry.info);
            // What a dead process served is history: its counters count, its versions do not.
            if (!running) info.live = false, info.vetting_since_unix_ms = 0;
            HandlerSummary& h = sum.handlers[info.name];
            if (info.vetting_since_unix_ms &&
                (!h.vetting_since_unix_ms || info.vetting_since_unix_ms < h.vetting_since_unix_ms))
                h.vetting_since_unix_ms = info.vetting_since_unix_ms;
            if (info.live && (!h.live || info.loaded_unix_ms > h.newest.loaded_unix_ms)) h.newest = info;
            if (!info.live && !h.live && info.refusal[0]) h.newest = info;
            h.live = h.live || info.live;
            if (info.refusal[0]) h.refusal = info.refusal;
            for (unsigned c = 0; c < 5; ++c) h.requests[c] += read(entry.requests[c]);
            for (unsigned b = 0; b < kLatencyBuckets; ++b) h.latency[b] += read(entry.latency[b]);
            h.errors += read(entry.errors);
            h.latency_sum_ns += read(entry.latency_sum_ns);
            h.loads += read(entry.loads);
            h.refusals += read(entry.refusals);
            h.slow_calls += read(entry.slow_calls);
        }
    }
    for (const CrashCount& crash : stats.crashes()) {
        if (!crash.name[0]) break;
        HandlerSummary& h = sum.handlers[crash.name];
        h.crashes += read(crash.crashes);
        h.rollbacks += read(crash.rollbacks);
    }
    for (auto& [name, h] : sum.handlers) {
        h.quarantined = h.live && is_quarantined(stats, name, h.newest.size, h.newest.content_hash);
        if (h.live && !h.quarantined) h.rolled_back_from = rolled_back_to(stats, name, h.newest.size, h.newest.content_hash);
    }
    return sum;
}

const char* state_of(const HandlerSummary& h) {
    if (h.quarantined) return "quarantined";
    if (h.vetting_since_unix_ms) return "vetting";  // a newer file: the live version, if any, serves meanwhile
    if (h.rolled_back_from) return "rolled back";
    if (h.live) return "live";
    if (!h.refusal.empty()) return "refused";
    return "removed";
}

std::string hex(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016" PRIx64, value);
    return text;
}

/// One sample per handler of a counter or gauge kept in HandlerSummary.
void per_handler(std::string& out, const Summary& sum, const char* name, const char* type, const char* help,
                 std::uint64_t (*value)(const HandlerSummary&)) {
    family(out, name, type, help);
    for (const auto& [handler, h] : sum.handlers) sample(out, name, "handler=\"" + label(handler) + "\"", double(value(h)));
}

void handler_metrics(std::string& out, const Summary& sum) {
    family(out, "cspd_handler_requests_total", "counter", "Handler calls, by handler and status class.");
    for (const auto& [name, h] : sum.handlers)
        for (unsigned c = 0; c < 5; ++c)
            if (h.requests[c] || c == 1)
                sample(out, "cspd_handler_requests_total",
                       "handler=\"" + label(name) + "\",code=\"" + kClasses[c] + "\"", double(h.requests[c]));
    per_handler(out, sum, "cspd_handler_errors_total", "counter",
                "Handler calls that threw or returned no valid status (answered 500).",
                [](const HandlerSummary& h) { return h.errors; });
    family(out, "cspd_handler_duration_seconds", "histogram", "Time spent in the handler, per call.");
    for (const auto& [name, h] : sum.handlers) {
        const std::string base = "handler=\"" + label(name) + "\"";
        std::uint64_t cumulative = 0;
        for (unsigned b = 0; b < kLatencyBuckets; ++b) {
            cumulative += h.latency[b];
            char le[32];
            if (b < std::size(kLatencyBounds))
                std::snprintf(le, sizeof le, "%g", kLatencyBounds[b]);
            else
                std::snprintf(le, sizeof le, "+Inf");
            sample(out, "cspd_handler_duration_seconds_bucket", base + ",le=\"" + le + "\"", double(cumulative));
        }
        sample(out, "cspd_handler_duration_seconds_sum", base, double(h.latency_sum_ns) * 1e-9);
        sample(out, "cspd_handler_duration_seconds_count", base, double(cumulative));
    }
    per_handler(out, sum, "cspd_handler_loads_total", "counter",
                "Handler versions loaded (each worker process loads its own).",
                [](const HandlerSummary& h) { return h.loads; });
    per_handler(out, sum, "cspd_handler_refusals_total", "counter",
                "Handler files refused (each worker process checks its own).",
                [](const HandlerSummary& h) { return h.refusals; });
    per_handler(out, sum, "cspd_handler_slow_calls_total", "counter",
                "Calls of a loop handler that held its event loop longer than --slow-call-warn.",
                [](const HandlerSummary& h) { return h.slow_calls; });
    per_handler(out, sum, "cspd_handler_crashes_total", "counter",
                "Worker processes lost to a crash or watchdog in this handler.",
                [](const HandlerSummary& h) { return h.crashes; });
    per_handler(out, sum, "cspd_handler_rollbacks_total", "counter",
                "Quarantined or fenced versions of this handler that gave way to the version they replaced.",
                [](const HandlerSummary& h) { return h.rollbacks; });
    per_handler(out, sum, "cspd_handler_quarantined", "gauge", "1 while the live version of this handler is quarantined.",
                [](const HandlerSummary& h) { return std::uint64_t(h.quarantined ? 1 : 0); });
}

void store_metrics(std::string& out, const SharedStore& store) {
    family(out, "cspd_kv_entries", "gauge", "Entries in the shared store (csp_kv_*).");
    sample(out, "cspd_kv_entries", "", double(store.size()));
    family(out, "cspd_kv_entries_max", "gauge", "Entries the shared store holds at most (--kv-entries).");
    sample(out, "cspd_kv_entries_max", "", double(store.limits().entries));
    family(out, "cspd_kv_quota_entries", "gauge", "Entries one handler may hold (--kv-quota).");
    sample(out, "cspd_kv_quota_entries", "", double(store.limits().quota()));
    const std::vector<OwnerAccounts::Use> owners = store.owners();
    family(out, "cspd_handler_kv_entries", "gauge", "Entries of the shared store charged to this handler.");
    for (const auto& owner : owners)
        sample(out, "cspd_handler_kv_entries", "handler=\"" + label(owner.name) + "\"", double(owner.entries));
    family(out, "cspd_handler_kv_quota_refusals_total", "counter",
           "Writes to the shared store refused because this handler held its whole quota.");
    for (const auto& owner : owners)
        sample(out, "cspd_handler_kv_quota_refusals_total", "handler=\"" + label(owner.name) + "\"",
               double(owner.refused));
}

constexpr const char* kLimitNames[kLimitKinds] = {"rate", "connections", "handler"};

void client_metrics(std::string& out, ClientLimits& clients) {
    family(out, "cspd_client_limited_total", "counter",
           "Requests, connections, streams and WebSockets refused by a per-client limit (--client-rate, "
           "--client-connections) or a handler's csp_limit.");
    for (std::size_t k = 0; k < kLimitKinds; ++k)
        sample(out, "cspd_client_limited_total", std::string("limit=\"") + kLimitNames[k] + "\"",
               double(clients.table().limited(LimitKind(k))));
    family(out, "cspd_client_table_evictions_total", "counter",
           "Client addresses and csp_limit keys forgotten to make room (--client-table).");
    sample(out, "cspd_client_table_evictions_total", "", double(clients.table().evictions()));
}

/// Topics across hosts (--cluster): the master's link to Redis.
void cluster_metrics(std::string& out, const ClusterStats& cluster) {
    family(out, "cspd_cluster_connected", "gauge", "1 while this host's link to the cluster's Redis is up (--cluster).");
    sample(out, "cspd_cluster_connected", "", cluster.state.load(std::memory_order_relaxed) == ClusterStats::connected);
    const std::pair<const char*, const Counter*> counters[] = {
        {"published", &cluster.published}, {"received", &cluster.received},     {"recovered", &cluster.recovered},
        {"gaps", &cluster.gaps},           {"reconnects", &cluster.reconnects}, {"refused", &cluster.refused},
        {"failed", &cluster.failed}};
    const char* const help[] = {
        "Messages this host published that Redis recorded.",
        "Messages other hosts published, delivered to this host's workers (live or recovered).",
        "Of those, messages read from a topic's history after a cut.",
        "Times a topic's subscribers here were told messages were lost for good (on_topic_gap or 1012).",
        "Times the link to Redis came back after it was lost.",
        "Publishes kept on this host: the queue for Redis was full (csp_publish said CSP_AGAIN).",
        "Publishes that could not cross: Redis refused them with an error, or the master held twice --cluster-queue (logged)."};
    for (std::size_t i = 0; i < std::size(counters); ++i) {
        const std::string name = std::string("cspd_cluster_") + counters[i].first + "_total";
        family(out, name.c_str(), "counter", help[i]);
        sample(out, name, "", double(read(*counters[i].second)));
    }
    family(out, "cspd_cluster_queue_bytes", "gauge", "Bytes of publishes waiting for Redis's answer (--cluster-queue).");
    sample(out, "cspd_cluster_queue_bytes", "", double(cluster.queue_bytes.load(std::memory_order_relaxed)));
    family(out, "cspd_cluster_lag_seconds", "gauge", "How long the oldest publish waiting for Redis has waited.");
    sample(out, "cspd_cluster_lag_seconds", "", double(cluster.lag_ms.load(std::memory_order_relaxed)) / 1000.0);
    family(out, "cspd_cluster_topics", "gauge", "Topics this host subscribes to across hosts.");
    sample(out, "cspd_cluster_topics", "", double(cluster.topics.load(std::memory_order_relaxed)));
}

nlohmann::ordered_json cluster_status(const ClusterStats& cluster, std::string_view redis, bool for_public) {
    const bool connected = cluster.state.load(std::memory_order_relaxed) == ClusterStats::connected;
    const std::uint64_t queued = cluster.queue_bytes.load(std::memory_order_relaxed);
    // Where the Redis is, is the operator's to know (the status address), not the public's.
    return {{"redis", for_public ? std::string_view("(on the status address)") : redis},
            {"link", connected ? "connected" : "down"},
            // Still ready (it serves), but publishes do not cross while the link is down.
            {"degraded", !connected},
            {"topics", cluster.topics.load(std::memory_order_relaxed)},
            {"published", read(cluster.published)},
            {"received", read(cluster.received)},
            {"recovered", read(cluster.recovered)},
            {"gaps", read(cluster.gaps)},
            {"reconnects", read(cluster.reconnects)},
            {"refused", read(cluster.refused)},
            {"failed", read(cluster.failed)},
            {"queue_bytes", queued},
            {"lag_ms", cluster.lag_ms.load(std::memory_order_relaxed)}};
}

/// An address key as people read it: an IPv4 address, or an IPv6 /64.
std::string key_text(const ClientKey& key) {
    const IpAddress address{key.bytes};
    return address.is_v4() ? address.text() : address.text() + "/64";
}

nlohmann::ordered_json client_status(ClientLimits& clients, bool for_public) {
    const ClientLimitsConfig& config = clients.config();
    nlohmann::ordered_json doc{{"rate_per_second", config.rate},
                               {"burst", config.rate > 0 ? config.effective_burst() : 0},
                               {"connections", config.connections},
                               {"table", config.table}};
    auto& limited = doc["limited"] = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < kLimitKinds; ++k) limited[kLimitNames[k]] = clients.table().limited(LimitKind(k));
    doc["evictions"] = clients.table().evictions();
    // Who is limited is the operator's to know, never the public's.
    if (!for_public) {
        auto& most = doc["most_limited"] = nlohmann::ordered_json::array();
        for (const ClientTable::Refused& r : clients.table().most_refused(10))
            most.push_back({{"address", key_text(r.key)}, {"refusals", r.refusals}});
    }
    return doc;
}

/// HTTPS: handshakes by version, resumptions, failures by reason, and each certificate's expiry.
void tls_metrics(std::string& out, const Summary& sum, const TlsStatusBoard& board) {
    family(out, "cspd_tls_handshakes_total", "counter", "TLS handshakes completed, by protocol version.");
    for (std::size_t v = 0; v < std::size_t(TlsVersion::count); ++v)
        sample(out, "cspd_tls_handshakes_total", std::string("version=\"") + kTlsVersionNames[v] + "\"",
               double(sum.tls_handshakes[v]));
    family(out, "cspd_tls_resumed_handshakes_total", "counter", "TLS handshakes that resumed a session (a ticket).");
    sample(out, "cspd_tls_resumed_handshakes_total", "", double(sum.tls_resumed));
    family(out, "cspd_tls_handshake_failures_total", "counter", "TLS handshakes that failed, by reason.");
    for (std::size_t f = 0; f < std::size_t(TlsFailure::count); ++f)
        sample(out, "cspd_tls_handshake_failures_total", std::string("reason=\"") + kTlsFailureNames[f] + "\"",
               double(sum.tls_failures[f]));
    const std::vector<CertificateState> certificates = board.certificates();
    family(out, "cspd_tls_certificate_expiry_timestamp_seconds", "gauge",
           "When the certificate serving from each file of --certs expires, Unix time.");
    for (const CertificateState& c : certificates)
        if (c.serving)
            sample(out, "cspd_tls_certificate_expiry_timestamp_seconds", "file=\"" + label(c.file) + "\"",
                   double(c.not_after));
    family(out, "cspd_tls_certificate_refused", "gauge",
           "1 while the current content of a file of --certs is refused (the previous certificate, if any, serves).");
    for (const CertificateState& c : certificates)
        sample(out, "cspd_tls_certificate_refused", "file=\"" + label(c.file) + "\"", c.refusal.empty() ? 0 : 1);
}

nlohmann::ordered_json tls_status(const Summary& sum, const TlsStatusBoard& board) {
    nlohmann::ordered_json tls;
    auto& handshakes = tls["handshakes"] = nlohmann::ordered_json::object();
    for (std::size_t v = 0; v < std::size_t(TlsVersion::count); ++v) handshakes[kTlsVersionNames[v]] = sum.tls_handshakes[v];
    tls["resumed"] = sum.tls_resumed;
    auto& failures = tls["failures"] = nlohmann::ordered_json::object();
    for (std::size_t f = 0; f < std::size_t(TlsFailure::count); ++f) failures[kTlsFailureNames[f]] = sum.tls_failures[f];
    auto& certificates = tls["certificates"] = nlohmann::ordered_json::array();
    for (const CertificateState& c : board.certificates()) {
        nlohmann::ordered_json item{{"file", c.file}, {"state", c.serving ? (c.refusal.empty() ? "serving" : "serving previous") : "refused"}};
        if (c.serving) {
            item["names"] = c.names;
            item["not_after_unix"] = c.not_after;
            item["sha256"] = c.sha256;
        }
        if (!c.refusal.empty()) item["last_refusal"] = {{"why", c.refusal}, {"at_unix", c.refused_at}};
        certificates.push_back(std::move(item));
    }
    return tls;
}

/// The sandbox (process/sandbox): calls it denied, by handler and call.
void sandbox_metrics(std::string& out, const SharedStats& stats) {
    family(out, "cspd_sandbox_denied_total", "counter",
           "Calls the sandbox denied (or, --sandbox-log-only, reported), by the handler that made them "
           "(\"\": code outside a handler's call) and the call.");
    for (const SandboxDenial& entry : stats.sandbox_denials.entries) {
        if (!entry.ready.load(std::memory_order_acquire)) continue;
        sample(out, "cspd_sandbox_denied_total", "handler=\"" + label(entry.handler) + "\",call=\"" + label(entry.call) + "\"",
               double(entry.count.load(std::memory_order_relaxed)));
    }
}

nlohmann::ordered_json sandbox_status(const SharedStats& stats) {
    const SandboxFacts& facts = stats.sandbox;
    nlohmann::ordered_json sandbox{{"enabled", facts.entered.load(std::memory_order_relaxed) != 0},
                                   {"log_only", facts.log_only.load(std::memory_order_relaxed) != 0},
                                   {"exec", facts.exec.load(std::memory_order_relaxed) != 0},
                                   {"seccomp", facts.seccomp.load(std::memory_order_relaxed) != 0},
                                   {"landlock", facts.landlock.load(std::memory_order_relaxed)}};
    auto& denied = sandbox["denied"] = nlohmann::ordered_json::array();
    for (const SandboxDenial& entry : stats.sandbox_denials.entries)
        if (entry.ready.load(std::memory_order_acquire))
            denied.push_back({{"handler", entry.handler},
                              {"call", entry.call},
                              {"count", entry.count.load(std::memory_order_relaxed)}});
    return sandbox;
}

}  // namespace

std::string render_metrics(const SharedStats& stats, const SharedStore* store, const TlsStatusBoard* tls,
                           ClientLimits* clients, std::string_view cluster_redis) {
    const Summary sum = summarize(stats);
    std::string out;
    out.reserve(4096 + sum.handlers.size() * 2048);
    if (store) store_metrics(out, *store);
    if (clients) client_metrics(out, *clients);
    if (!cluster_redis.empty()) cluster_metrics(out, stats.cluster);
    sandbox_metrics(out, stats);

    family(out, "cspd_requests_total", "counter", "Responses sent, by status class (handlers, static files, errors).");
    for (unsigned c = 0; c < 5; ++c)
        sample(out, "cspd_requests_total", std::string("code=\"") + kClasses[c] + "\"", double(sum.requests[c]));
    family(out, "cspd_open_connections", "gauge", "Client connections open now.");
    sample(out, "cspd_open_connections", "", double(sum.open_connections));
    family(out, "cspd_connections_total", "counter", "Client connections accepted.");
    sample(out, "cspd_connections_total", "", double(sum.accepted));
    family(out, "cspd_replies_owed", "gauge", "Answers that deferred and blocking handler calls still owe clients.");
    sample(out, "cspd_replies_owed", "", double(sum.replies_owed));
    family(out, "cspd_blocking_calls_running", "gauge", "Blocking handlers' calls running on their pools now.");
    sample(out, "cspd_blocking_calls_running", "", double(sum.blocking_busy));
    family(out, "cspd_blocking_calls_queued", "gauge", "Blocking handlers' calls waiting for a thread now.");
    sample(out, "cspd_blocking_calls_queued", "", double(sum.blocking_queued));
    family(out, "cspd_blocking_calls_refused_total", "counter",
           "Blocking handlers' calls answered 503: every thread busy and the queue full.");
    sample(out, "cspd_blocking_calls_refused_total", "", double(sum.blocking_refused));
    family(out, "cspd_reply_cache_hits_total", "counter", "Requests answered from the reply cache (csp_reply_cache).");
    sample(out, "cspd_reply_cache_hits_total", "", double(sum.cache_hits));
    family(out, "cspd_reply_cache_misses_total", "counter",
           "Requests to handlers that cache, for which no live entry was found.");
    sample(out, "cspd_reply_cache_misses_total", "", double(sum.cache_misses));
    family(out, "cspd_compressed_responses_total", "counter",
           "Handler answers sent compressed, by content coding (reply cache hits included).");
    for (std::size_t c = 0; c < 3; ++c)
        sample(out, "cspd_compressed_responses_total", std::string("encoding=\"") + kCodingNames[c] + "\"",
               double(sum.compressed[c]));
    family(out, "cspd_compression_bytes_total", "counter",
           "Bytes the compressors took in and gave out (a cached compressed body is not compressed again).");
    sample(out, "cspd_compression_bytes_total", "direction=\"in\"", double(sum.compression_in));
    sample(out, "cspd_compression_bytes_total", "direction=\"out\"", double(sum.compression_out));
    family(out, "cspd_access_log_dropped_total", "counter",
           "Access log lines dropped because the log's writer was too far behind (a slow disk, a pipe nobody reads).");
    sample(out, "cspd_access_log_dropped_total", "", double(sum.access_log_dropped));
    family(out, "cspd_reply_cache_bytes", "gauge", "Memory the reply cache holds now, bytes.");
    sample(out, "cspd_reply_cache_bytes", "", double(sum.cache_bytes));

    unsigned workers = 0;
    const unsigned slots = std::min(stats.slot_count.load(std::memory_order_relaxed), kMaxSlots);
    for (unsigned s = 0; s < slots; ++s) workers += stats.slots[s].pid.load(std::memory_order_relaxed) != 0;
    family(out, "cspd_event_loops", "gauge", "Event loops running now, over all worker processes.");
    sample(out, "cspd_event_loops", "", workers);
    family(out, "cspd_worker_restarts_total", "counter", "Worker processes the master replaced.");
    sample(out, "cspd_worker_restarts_total", "", double(read(stats.worker_restarts)));
    family(out, "cspd_start_time_seconds", "gauge", "When the server started, Unix time.");
    sample(out, "cspd_start_time_seconds", "", double(stats.started_unix_ms) / 1000.0);

    handler_metrics(out, sum);
    protocol_metrics(out, stats);
    if (tls) tls_metrics(out, sum, *tls);
    return out;
}

namespace {

nlohmann::ordered_json kv_store_status(const SharedStore& store) {
    nlohmann::ordered_json kv{{"entries", store.size()},
                              {"entries_max", store.limits().entries},
                              {"quota_entries", store.limits().quota()}};
    auto& by_handler = kv["by_handler"] = nlohmann::ordered_json::object();
    for (const auto& owner : store.owners())
        by_handler[owner.name] = {{"entries", owner.entries}, {"quota_refusals", owner.refused}};
    return kv;
}

nlohmann::ordered_json handler_status(const std::string& name, const HandlerSummary& h, bool for_public) {
    nlohmann::ordered_json item;
    item["name"] = name;
    item["state"] = state_of(h);
    if (h.live) {
        item["version"] = {{"size", h.newest.size},
                           {"mtime_ns", h.newest.mtime_ns},
                           {"fnv1a64", hex(h.newest.content_hash)},
                           {"loaded_unix_ms", h.newest.loaded_unix_ms}};
    }
    if (h.vetting_since_unix_ms) item["vetting_since_unix_ms"] = h.vetting_since_unix_ms;
    if (const auto& from = h.rolled_back_from) {
        const auto phase = static_cast<HandlerPhase>(from->phase);
        item["rolled_back"] = {
            {"from", {{"size", from->size}, {"fnv1a64", hex(from->content_hash)}}},
            {"to", {{"size", h.newest.size}, {"fnv1a64", hex(h.newest.content_hash)}}},
            {"why", phase == HandlerPhase::load || phase == HandlerPhase::init
                        ? std::string("it brought a worker down ") + phase_text(phase)
                        : "it crashed " + std::to_string(from->crashes) + " times within the quarantine window"},
            {"since_unix_ms", from->since_unix_ms}};
    }
    if (!h.refusal.empty()) item["last_refusal"] = for_public ? without_paths(h.refusal) : h.refusal;
    std::uint64_t requests = 0;
    for (auto count : h.requests) requests += count;
    item["requests"] = requests;
    item["errors"] = h.errors;
    item["server_errors"] = h.requests[4];
    item["crashes"] = h.crashes;
    item["rollbacks"] = h.rollbacks;
    item["loads"] = h.loads;
    item["refusals"] = h.refusals;
    item["slow_calls"] = h.slow_calls;
    return item;
}

/// Every event loop's slot that a process writes (a replaced worker's, or one never used, is left out).
nlohmann::ordered_json workers_status(const SharedStats& stats, bool with_tls, bool for_public) {
    auto workers = nlohmann::ordered_json::array();
    const unsigned slots = std::min(stats.slot_count.load(std::memory_order_relaxed), kMaxSlots);
    for (unsigned s = 0; s < slots; ++s) {
        const LoopSlot& slot = stats.slots[s];
        std::uint64_t requests = 0;
        for (const auto& count : slot.requests) requests += read(count);
        const std::int32_t pid = slot.pid.load(std::memory_order_relaxed);
        if (!pid && slot.started_unix_ms.load(std::memory_order_relaxed) == 0) continue;
        workers.push_back({{"slot", s},
                           {"pid", pid},
                           {"state", pid ? "running" : "restarting"},
                           {"started_unix_ms", slot.started_unix_ms.load(std::memory_order_relaxed)},
                           {"restarts", slot.restarts.load(std::memory_order_relaxed)},
                           {"open_connections", pid ? read(slot.open_connections) : 0},
                           {"requests", requests}});
        if (with_tls) {
            std::uint64_t handshakes = 0;
            for (const auto& count : slot.tls_handshakes) handshakes += read(count);
            workers.back()["tls_handshakes"] = handshakes;
            workers.back()["tls_resumed"] = read(slot.tls_resumed);
        }
        // What its handlers declared of the sandbox: paths, so the status address alone says them.
        if (!for_public && pid && slot.sandbox_declared[0])
            workers.back()["sandbox_declared"] =
                std::string(slot.sandbox_declared, strnlen(slot.sandbox_declared, sizeof slot.sandbox_declared));
    }
    return workers;
}

}  // namespace

std::string render_status(const SharedStats& stats, bool for_public, const SharedStore* store,
                          const TlsStatusBoard* tls, ClientLimits* clients, std::string_view cluster_redis) {
    const Summary sum = summarize(stats);
    nlohmann::ordered_json doc;
    doc["started_unix_ms"] = stats.started_unix_ms;
    doc["requests"] = nlohmann::ordered_json::object();
    for (unsigned c = 0; c < 5; ++c) doc["requests"][kClasses[c]] = sum.requests[c];
    doc["open_connections"] = sum.open_connections;
    doc["connections_total"] = sum.accepted;
    doc["replies_owed"] = sum.replies_owed;
    doc["blocking_calls"] = {{"running", sum.blocking_busy}, {"queued", sum.blocking_queued},
                             {"refused", sum.blocking_refused}};
    doc["reply_cache"] = {{"hits", sum.cache_hits}, {"misses", sum.cache_misses}, {"bytes", sum.cache_bytes}};
    doc["compression"] = {{"responses", {{kCodingNames[0], sum.compressed[0]},
                                         {kCodingNames[1], sum.compressed[1]},
                                         {kCodingNames[2], sum.compressed[2]}}},
                          {"bytes_in", sum.compression_in},
                          {"bytes_out", sum.compression_out}};
    doc["worker_restarts"] = read(stats.worker_restarts);
    add_protocol_status(doc, stats);
    if (tls) doc["tls"] = tls_status(sum, *tls);
    if (store) doc["kv_store"] = kv_store_status(*store);
    if (clients) doc["clients"] = client_status(*clients, for_public);
    if (!cluster_redis.empty()) doc["cluster"] = cluster_status(stats.cluster, cluster_redis, for_public);
    doc["sandbox"] = sandbox_status(stats);
    auto& handlers = doc["handlers"] = nlohmann::ordered_json::array();
    for (const auto& [name, h] : sum.handlers) handlers.push_back(handler_status(name, h, for_public));
    doc["workers"] = workers_status(stats, tls != nullptr, for_public);
    // Refusal reasons hold paths, which may be any bytes: replace what is not UTF-8 rather than throw.
    return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace cspd
