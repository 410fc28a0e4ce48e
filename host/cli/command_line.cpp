#include "cli/command_line.hpp"

#include "common/ascii.hpp"
#include "compression/compression_policy.hpp"
#include "stats/shared_stats.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <thread>

#ifndef CSPD_VERSION
#define CSPD_VERSION "0.0.0"
#endif

namespace cspd {
namespace {

/// Where handlers and static files are by default: beside the build for a binary run from
/// the build tree, under the install prefix for an installed one.
struct DefaultFolders {
    std::string handlers, www;
};

DefaultFolders default_folders() {
#if defined(CSPD_INSTALLED_HANDLERS_FROM_BIN) && defined(CSPD_INSTALLED_WWW_FROM_BIN)
    // Installed: the folders sit where `cmake --install` put them relative to the binary,
    // whatever the prefix (/usr/local/var/lib/cspd/handlers, /usr/local/share/cspd/www...).
    std::error_code ec;
    const std::filesystem::path bin = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    const std::filesystem::path www = (bin / CSPD_INSTALLED_WWW_FROM_BIN).lexically_normal();
    if (!ec && std::filesystem::is_directory(www, ec))
        return {(bin / CSPD_INSTALLED_HANDLERS_FROM_BIN).lexically_normal().string(), www.string()};
#endif
#if defined(CSPD_BUILD_HANDLERS_DIR) && defined(CSPD_BUILD_WWW_DIR)
    return {CSPD_BUILD_HANDLERS_DIR, CSPD_BUILD_WWW_DIR};
#else
    return {"handlers", "www"};
#endif
}

/// What the command line says in words Config keeps otherwise (a flag that turns a default off,
/// a path), turned into Config by apply().
struct Readings {
    std::string handlers_dir, www_dir, upload_dir, sdk_include, log_file, server_folder, access_log,
        access_log_format = "combined", certs_dir;
    bool single_process = false, no_vetting = false, no_rollback = false, no_status = false, no_probes = false,
         insecure_handlers = false, no_compress = false, no_sandbox = false;
    std::string data_dir;
    std::string compress_encodings = "zstd,br,gzip", compress_types;  // empty types: the default list
    std::string client_rate, trust_proxy, trust_proxy_header = "X-Forwarded-For";
    std::string cluster;
    ClusterOptions cluster_options;

    void apply(Config& config) const {
        if (single_process) config.workers = 0;
        if (config.threads == 0) config.threads = 1;
        config.status_endpoints = !no_status;
        config.log_file = log_file;
        config.access_log = access_log;
        config.access_log_format = access_log_format == "json" ? AccessLogFormat::json : AccessLogFormat::combined;
        config.connection.upload_dir = upload_dir;
        config.strict_handler_modes = !insecure_handlers;
        config.vet_handlers = !no_vetting;
        config.rollback = !no_rollback;
        config.sandbox.enabled = !no_sandbox;
        if (!data_dir.empty()) config.sandbox.data_dir = std::filesystem::absolute(data_dir).lexically_normal();
        if (config.compile_sources) config.sandbox.allow_exec = true;  // the compiler runs from the worker
        config.server_folder = server_folder;
        config.sdk_include = sdk_include;
        config.probes = !no_probes;
        config.handlers_dir = handlers_dir;
        config.www_dir = www_dir;
        config.certs_dir = certs_dir;
        config.compression.encodings.clear();
        if (!no_compress)
            for (const std::string& name : comma_list(compress_encodings))
                if (const auto coding = coding_named(name); coding && *coding != ContentCoding::identity)
                    config.compression.encodings.push_back(*coding);
        if (!compress_types.empty()) config.compression.types = comma_list(compress_types);
        if (!client_rate.empty()) config.client_limits.rate = parse_rate(client_rate).value_or(0);
        std::string error;
        if (!trust_proxy.empty()) config.trusted_proxies.peers = AddressRanges::parse(trust_proxy, error).value_or(AddressRanges());
        config.trusted_proxies.header =
            iequals(trust_proxy_header, "forwarded") ? ForwardedHeader::forwarded : ForwardedHeader::x_forwarded_for;
        if (!cluster.empty()) {
            config.cluster = cluster_options;
            config.cluster->address = parse_redis_address(cluster, error).value_or(RedisAddress());
            config.cluster->max_message = config.connection.websocket.max_message;
        }
    }

    static std::vector<std::string> comma_list(std::string_view text) {
        std::vector<std::string> items;
        while (!text.empty()) {
            const std::size_t comma = text.find(',');
            std::string_view item = text.substr(0, comma);
            while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
            while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
            if (!item.empty()) items.emplace_back(item);
            text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        }
        return items;
    }
};

// Connections time deadlines with 32-bit millisecond stamps, compared as signed: good for 24 days.
const CLI::Range kTimeoutRange(0u, 20u * 86400u, "at most 20 days");

void add_serving_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Serving";
    app.add_option("--port", config.port, "TCP port (0: any free port, logged)")->capture_default_str()->group(group);
    app.add_option("--bind", config.binds,
                   "address to listen on; again for each further one (an IPv6 address, e.g. [::], is IPv6 only: "
                   "--bind 0.0.0.0 --bind [::] for both families)")
        ->capture_default_str()
        ->allow_extra_args(false)
        ->group(group);
    app.add_option("--handlers", read.handlers_dir, "folder watched for NAME.so handlers")
        ->capture_default_str()
        ->group(group);
    app.add_option("--www", read.www_dir, "folder of static files")->capture_default_str()->group(group);
    app.add_option("--static-max-age", config.static_max_age_s,
                   "static files say Cache-Control: max-age=S (default: no Cache-Control)")
        ->check(CLI::Range(0, 1 << 30))
        ->group(group);
    app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error, critical or off")
        ->capture_default_str()
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
        ->group(group);
    app.add_option("--log-file", read.log_file, "append logs here instead of standard error; SIGUSR1 reopens it")
        ->group(group);
    app.add_option("--access-log", read.access_log,
                   "a line per request appended here ('-': standard output); SIGUSR1 reopens it (default: none)")
        ->group(group);
    app.add_option("--access-log-format", read.access_log_format,
                   "combined (nginx's, for goaccess and the like) or json (one object per line)")
        ->capture_default_str()
        ->check(CLI::IsMember({"combined", "json"}))
        ->group(group);
}

void add_tls_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "HTTPS";
    auto* tls_port = app.add_option("--tls-port", config.tls_port,
                                    "also serve HTTPS on this TCP port, on --bind (0: any free port, logged)")
                         ->group(group);
    app.add_option("--certs", read.certs_dir,
                   "folder of certificates, watched: NAME.pem (key and chain) or NAME.crt + NAME.key; SNI chooses "
                   "among them, default.pem (else the first by name) answers the rest")
        ->needs(tls_port)
        ->group(group);
    app.add_flag("--tls-self-signed", config.tls_self_signed,
                 "when no certificate in --certs serves, make one for localhost, 127.0.0.1 and ::1 at start "
                 "(for trying HTTPS out)")
        ->needs(tls_port)
        ->group(group);
    app.add_flag("--no-http2", [&config](std::int64_t) { config.connection.http2.enabled = false; },
                 "serve HTTP/1.1 only: no h2 by ALPN on --tls-port, no h2c (prior knowledge) on --port")
        ->group(group);
    app.add_option("--h2-max-streams", config.connection.http2.max_streams,
                   "HTTP/2 streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS)")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000u))
        ->group(group);
    app.add_option("--h2-answer-budget", config.connection.http2.answer_budget,
                   "bytes of built answers one HTTP/2 connection may hold while its client's windows keep them "
                   "unsent; past it, its next requests wait unrouted until some of those bytes are out")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(64 * 1024), std::size_t(1) << 32))
        ->group(group);
    app.add_option("--ws-max-message", config.connection.websocket.max_message,
                   "a WebSocket message (reassembled, or published) may be this many bytes; past it the "
                   "conversation is closed with 1009")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(1), std::size_t(1) << 30))
        ->group(group);
    app.add_option("--ws-ping-interval", config.connection.websocket.ping_interval_s,
                   "a WebSocket peer that sent nothing this long is pinged, and closed if it sends nothing for "
                   "as long again, s (0: no pings)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 86400u))
        ->group(group);
    app.add_option("--ws-idle-timeout", config.connection.websocket.idle_timeout_s,
                   "a WebSocket peer that sent nothing (not even a pong) this long is closed with 1001, s (0: never)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 20u * 86400u))
        ->group(group);
    app.add_flag("--no-ws-deflate", [&config](std::int64_t) { config.connection.websocket.deflate = false; },
                 "never compress WebSocket messages (permessage-deflate is otherwise accepted when a client offers it)")
        ->group(group);
    app.add_flag("--https-redirect", config.https_redirect,
                 "the plain port answers 308 to the same URL over HTTPS (the /-/ probes excepted)")
        ->needs(tls_port)
        ->group(group);
}

void add_process_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Processes";
    config.workers = std::max(1u, std::thread::hardware_concurrency());
    app.add_option("--workers", config.workers,
                   "worker processes under a supervising master (default: one per core; 0: one process, no master)")
        ->capture_default_str()
        ->group(group);
    app.add_flag("--single-process", read.single_process,
                 "same as --workers 0: everything in one process, for debugging")
        ->group(group);
    app.add_option("--threads", config.threads, "event loops per process")->capture_default_str()->group(group);
    app.add_option("--worker-max-rss", config.worker_max_rss_mib,
                   "a worker whose resident memory passes this is replaced gracefully, MiB (0: never)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--user", config.user,
                   "started as root, run workers and vetting (all handler code) as this user; without it they run "
                   "as nobody (--user root keeps root: not advised)")
        ->group(group);
    app.add_option("--drain-timeout", config.drain_timeout_s, "on SIGTERM, wait this long for in-flight requests, s")
        ->capture_default_str()
        ->group(group);
    app.add_option("--blocking-threads", config.blocking_threads,
                   "threads per worker for blocking handlers (CSP_BLOCKING_HANDLER)")
        ->capture_default_str()
        ->check(CLI::Range(1u, 4096u))
        ->group(group);
    app.add_option("--blocking-queue", config.blocking_queue,
                   "blocking calls that may wait for a thread; past it they get 503")
        ->capture_default_str()
        ->group(group);
}

void add_request_limits(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Requests";
    app.add_option("--max-body", config.connection.max_body_bytes, "largest request body, bytes (larger: 413)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--body-memory", config.connection.memory_body_bytes,
                   "bodies larger than this, bytes (up to --max-body), are written to a temporary file as they "
                   "arrive and handed to handlers mapped from it (0: all in memory)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--min-body-rate", config.connection.min_body_rate,
                   "a request body must keep arriving at this rate, measured over each --header-timeout, or the "
                   "client gets 408 and is closed (it would hold its share of the upload folder), bytes/s (0: any)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--upload-dir", read.upload_dir, "where those files go (default: TMPDIR, or /tmp)")->group(group);
    app.add_option("--keepalive-timeout", config.connection.keepalive_timeout_s, "idle keep-alive connections close after this, s")
        ->capture_default_str()
        ->check(kTimeoutRange)
        ->group(group);
    app.add_option("--header-timeout", config.connection.header_timeout_s, "a request must arrive whole within this, s")
        ->capture_default_str()
        ->check(kTimeoutRange)
        ->group(group);
    app.add_option("--send-timeout", config.connection.send_timeout_s,
                   "a client that takes none of the response owed to it for this long is closed, s")
        ->capture_default_str()
        ->check(CLI::Range(1u, 20u * 86400u, "1 s to 20 days"))
        ->group(group);
    app.add_option("--max-connections", config.max_connections, "open connections at most; past it, new ones get 503")
        ->capture_default_str()
        ->group(group);
    app.add_option("--max-header-size", config.connection.max_head_bytes,
                   "request line + headers, bytes (larger: 431, or 414 for the URL)")
        ->capture_default_str()
        ->group(group);
    app.add_flag("--request-id-header", config.request_id_header,
                 "send each request's id back as X-Request-Id (the client's own when sane, else a new one)")
        ->group(group);
}

void add_compression_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Compression";
    app.add_flag("--no-compress", read.no_compress, "send handler answers as they are, never compressed")->group(group);
    app.add_option("--compress-encodings", read.compress_encodings,
                   "codings offered, most preferred first: among those a client accepts with equal q, the first "
                   "here is sent")
        ->capture_default_str()
        ->check([](const std::string& text) -> std::string {
            const auto items = Readings::comma_list(text);
            if (items.empty()) return "name at least one of zstd, br, gzip (or --no-compress)";
            for (const std::string& name : items)
                if (const auto coding = coding_named(name); !coding || *coding == ContentCoding::identity)
                    return "unknown coding '" + name + "': zstd, br or gzip";
            return {};
        })
        ->group(group);
    app.add_option("--compress-types", read.compress_types,
                   "Content-Types compressed, comma-separated: type/subtype, type/* or type/*+suffix (default: "
                   "text/*, application/json, application/*+json, application/javascript, application/xml, "
                   "application/*+xml, image/svg+xml, application/wasm)")
        ->check([](const std::string& text) -> std::string {
            for (const std::string& pattern : Readings::comma_list(text))
                if (!valid_type_pattern(pattern)) return "'" + pattern + "' is not type/subtype, type/* or type/*+suffix";
            return {};
        })
        ->group(group);
    app.add_option("--compress-min-size", config.compression.min_size,
                   "bodies smaller than this, bytes, are sent as they are")
        ->capture_default_str()
        ->group(group);
}

void add_client_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Per-client limits";
    app.add_option("--client-rate", read.client_rate,
                   "requests each client address may make: R a second, or R/m a minute (IPv6 by /64, for the "
                   "whole host); past it, 429 with Retry-After. Off by default")
        ->check([](const std::string& text) -> std::string {
            return parse_rate(text) ? std::string() : "'" + text + "' is not a rate: R or R/s (a second), R/m (a minute)";
        })
        ->group(group);
    app.add_option("--client-burst", config.client_limits.burst,
                   "requests a client may make at once before --client-rate paces it (default: the rate a second)")
        ->check(CLI::Range(1u, 1000000u))
        ->group(group);
    app.add_option("--client-connections", config.client_limits.connections,
                   "connections, HTTP/2 streams and WebSockets each client address may hold open at once "
                   "(for the whole host). Off by default")
        ->check(CLI::Range(1u, 1000000u))
        ->group(group);
    app.add_option("--client-table", config.client_limits.table,
                   "client addresses (and csp_limit keys) remembered at once; past it the least recently seen is "
                   "forgotten")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(64), std::size_t(1) << 24))
        ->group(group);
    app.add_option("--trust-proxy", read.trust_proxy,
                   "CIDR[,CIDR...]: from these peers only, the client is the right-most address of X-Forwarded-For "
                   "(or Forwarded: for=) that is not one of them")
        ->check([](const std::string& text) -> std::string {
            std::string error;
            return AddressRanges::parse(text, error) ? std::string() : error;
        })
        ->group(group);
    app.add_option("--trust-proxy-header", read.trust_proxy_header,
                   "the one header --trust-proxy's peers write the client in: X-Forwarded-For or Forwarded (for=); "
                   "the other is passed to handlers and never read")
        ->capture_default_str()
        ->check([](const std::string& text) -> std::string {
            return iequals(text, "x-forwarded-for") || iequals(text, "forwarded") ? std::string()
                                                                                   : "X-Forwarded-For or Forwarded";
        })
        ->group(group);
    app.add_flag("--proxy-protocol", config.proxy_protocol,
                 "every connection to --port and --tls-port begins with a PROXY protocol header (v1 or v2, as "
                 "HAProxy's send-proxy and nginx's proxy_protocol send): its source is the client")
        ->group(group);
}

void add_cluster_options(CLI::App& app, Readings& read) {
    const char* group = "Topics across hosts";
    app.add_option("--cluster", read.cluster,
                   "redis://HOST:PORT or redis+unix:///PATH: a csp_publish reaches the topic's subscribers on every "
                   "cspd that names the same Redis. Off by default")
        ->check([](const std::string& text) -> std::string {
            std::string why;
            return parse_redis_address(text, why) ? std::string() : "'" + text + "': " + why;
        })
        ->group(group);
    app.add_option("--cluster-history", read.cluster_options.history,
                   "messages kept per topic, so that a host cut off for a while gets what it missed")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(1), std::size_t(10'000'000)))
        ->group(group);
    app.add_option("--cluster-history-ttl", read.cluster_options.history_ttl_s,
                   "seconds a topic's message is kept at most")
        ->capture_default_str()
        ->check(CLI::Range(1u, 30u * 86400u))
        ->group(group);
    app.add_option("--cluster-queue", read.cluster_options.queue_bytes,
                   "bytes of publishes that wait while Redis cannot be reached; past it csp_publish says CSP_AGAIN "
                   "(the message reaches this host only)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(64) << 10, std::size_t(1) << 32))
        ->group(group);
}

void add_handler_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Handlers";
    app.add_flag("--compile", config.compile_sources,
                 "also serve NAME.c / NAME.cpp dropped into the handlers folder, compiled on the fly")
        ->group(group);
    app.add_flag("--dev", config.dev, "with --compile: a source that does not compile answers 500 with the diagnostics")
        ->group(group);
    app.add_option("--compile-timeout", config.compile_timeout_s, "longest a compilation may run, s")
        ->capture_default_str()
        ->group(group);
    app.add_option("--sdk-include", read.sdk_include,
                   "SDK headers for --compile (default: beside the binary, or the source tree)")
        ->group(group);
    app.add_flag("--no-vetting", read.no_vetting,
                 "load new handler versions without trying them in a short-lived process first")
        ->group(group);
    app.add_option("--init-timeout", config.init_timeout_s,
                   "a handler version whose loading, init or cleanup takes longer is refused, s")
        ->capture_default_str()
        ->check(CLI::Range(1u, 3600u))
        ->group(group);
    app.add_flag("--insecure-handlers", read.insecure_handlers,
                 "load handler files even if group/others may write them or their folder (development only)")
        ->group(group);
    app.add_option("--handler-timeout", config.connection.handler_timeout_s,
                   "watchdog: a handler call running longer aborts its worker, s (0: off)")
        ->capture_default_str()
        ->check(kTimeoutRange)
        ->group(group);
    app.add_option("--pending-timeout", config.connection.pending_timeout_s,
                   "a deferred reply not finished within this gets 504, s (0: never)")
        ->capture_default_str()
        ->check(kTimeoutRange)
        ->group(group);
    app.add_option("--slow-call-warn", config.slow_call_warn_ms,
                   "a call of a (non-blocking) handler that holds its event loop longer is logged and counted, "
                   "ms (0: never)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 3'600'000u))
        ->group(group);
    app.add_option("--quarantine-crashes", config.quarantine_crashes,
                   "quarantine a handler version after this many crashes… (0: never)")
        ->capture_default_str()
        ->group(group);
    app.add_option("--quarantine-window", config.quarantine_window_s, "…within this many seconds")
        ->capture_default_str()
        ->group(group);
    app.add_flag("--no-rollback", read.no_rollback,
                 "a quarantined version answers 503 instead of giving way to the version it replaced")
        ->group(group);
}

void add_sandbox_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Sandbox";
    app.add_flag("--no-sandbox", read.no_sandbox,
                 "run handlers without the kernel's sandbox (file rules and the call filter): all the account may do")
        ->group(group);
    app.add_flag("--sandbox-log-only", config.sandbox.log_only,
                 "log and count the calls the sandbox would deny, and let them run; no file rules")
        ->group(group);
    app.add_flag("--allow-exec", config.sandbox.allow_exec, "handlers may start programs (execve; --compile implies it)")
        ->group(group);
    app.add_option("--data-dir", read.data_dir,
                   "a folder of its own beneath this for each handler, readable and writable by it (csp_data_dir)")
        ->group(group);
}

void add_toolkit_options(CLI::App& app, Config& config) {
    const char* group = "Toolkit";
    app.add_option("--kv-entries", config.kv_entries, "entries of the store all workers share (csp_kv_*); 0: no store")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(0), std::size_t(1) << 24))
        ->group(group);
    app.add_option("--kv-quota", config.kv_quota_percent,
                   "entries of that store one handler may hold (charged to the last writer), percent of --kv-entries")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100u))
        ->group(group);
    app.add_option("--kv-value-max", config.kv_value_max, "largest value in that store, bytes")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(16), std::size_t(1) << 20))
        ->group(group);
    app.add_option("--handler-log-rate", config.handler_log_rate,
                   "csp_log lines a second per handler and worker (bursts of twice that); more are dropped, counted")
        ->capture_default_str()
        ->group(group);
    app.add_option("--cache-size", config.cache_mib,
                   "reply cache per worker for handlers that ask for it (csp_reply_cache), MiB (0: off)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t(0), std::size_t(1) << 16))
        ->group(group);
}

void add_status_options(CLI::App& app, Config& config, Readings& read) {
    const char* group = "Status";
    auto* no_status =
        app.add_flag("--no-status", read.no_status, "do not answer GET /-/status and /metrics (they fall through to www/)")
            ->group(group);
    app.add_option("--status-listen", config.status_listen,
                   "serve /-/status and /metrics on this ADDRESS:PORT only (e.g. 127.0.0.1:9100), not on --port; "
                   "again for each further address (e.g. [::1]:9100)")
        ->allow_extra_args(false)
        ->excludes(no_status)
        ->group(group);
    app.add_flag("--no-probes", read.no_probes, "do not answer GET /-/healthy and /-/ready (they fall through to www/)")
        ->group(group);
    app.add_option("--max-handlers", config.max_handlers,
                   "handler names counted in /-/status and /metrics (removed ones are recycled); more are served, "
                   "uncounted, with a warning")
        ->capture_default_str()
        ->check(CLI::Range(1u, kMaxHandlerNames))
        ->group(group);
}

/// Set by the master when it starts a worker; not for people (no group: not in --help).
void add_worker_role(CLI::App& app, Invocation& invocation, Readings& read) {
    app.add_option("--worker-index", invocation.worker_index)->group("");
    app.add_option("--master-pid", invocation.master_pid)->group("");
    app.add_option("--worker-slot", invocation.worker_slot)->group("");
    app.add_option("--server-folder", read.server_folder)->group("");
}

}  // namespace

Invocation parse_command_line(int argc, char** argv) {
    Invocation invocation;
    Config& config = invocation.config;
    const DefaultFolders defaults = default_folders();
    Readings read;
    read.handlers_dir = defaults.handlers;
    read.www_dir = defaults.www;

    CLI::App app{"cspd: serves C/C++ shared-object handlers at /csp/NAME, reloading them as files change"};
    app.set_version_flag("--version", std::string("cspd ") + CSPD_VERSION);
    add_serving_options(app, config, read);
    add_tls_options(app, config, read);
    add_process_options(app, config, read);
    add_request_limits(app, config, read);
    add_compression_options(app, config, read);
    add_client_options(app, config, read);
    add_cluster_options(app, read);
    add_handler_options(app, config, read);
    add_sandbox_options(app, config, read);
    add_toolkit_options(app, config);
    add_status_options(app, config, read);
    add_worker_role(app, invocation, read);

    auto* create = app.add_subcommand("new", "write a handler skeleton NAME.c or NAME.cpp to start from");
    NewHandlerRequest skeleton;
    create->add_option("name", skeleton.name, "handler name ([A-Za-z0-9_-]+)")->required();
    create->add_option("--lang", skeleton.lang, "c or cpp")->capture_default_str();
    create->add_option("--dir", skeleton.dir, "folder to write into")->capture_default_str();
    auto* hash = app.add_subcommand("hash", "print each file's fnv1a64, as /-/status shows a handler version's");
    std::vector<std::string> hash_files;
    hash->add_option("files", hash_files, "handler files")->required();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        invocation.exit_code = app.exit(e);
        return invocation;
    }
    if (*create) {
        invocation.new_handler = skeleton;
        return invocation;
    }
    if (*hash) {
        invocation.hash_files = hash_files;
        return invocation;
    }
    read.apply(config);
    if (config.tls_port && config.certs_dir.empty() && !config.tls_self_signed) {
        std::fprintf(stderr, "--tls-port needs certificates: --certs DIR, or --tls-self-signed to try it out\n");
        invocation.exit_code = 2;
    }
    if (config.cluster && config.workers == 0) {
        // The link to Redis lives in the master, beside the workers: one process has none.
        std::fprintf(stderr, "--cluster needs a master and its workers: not with --workers 0 or --single-process\n");
        invocation.exit_code = 2;
    }
    return invocation;
}

}  // namespace cspd
