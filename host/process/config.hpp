// Everything the command line decides, in one place.
#pragma once

#include "common/ip_address.hpp"
#include "compression/compression_policy.hpp"
#include "http/forwarded_for.hpp"
#include "cluster/cluster_link.hpp"
#include "limits/client_limits.hpp"
#include "process/worker_role.hpp"
#include "serving/connection_limits.hpp"
#include "routing/access_log_line.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cspd {

/// What handler code may touch (process/sandbox): --no-sandbox, --sandbox-log-only, --allow-exec, --data-dir.
struct SandboxConfig {
    bool enabled = true;              ///< every serving process, once its set-up is done
    bool log_only = false;            ///< denied calls are reported and run after all; no file rules
    bool allow_exec = false;          ///< handlers may start programs (--compile needs it too)
    std::filesystem::path data_dir;   ///< a folder per handler beneath (csp_data_dir); empty: none
};

struct Config {
    /// Each connection's limits and timeouts, by protocol (--max-body, --send-timeout, --h2-*,
    /// --ws-*, ...): each loop gets a copy; --handler-timeout is also the master's watchdog.
    ConnectionLimits connection;
    /// --bind, once per address: every loop listens on each (the port, and --tls-port, on all).
    /// An IPv6 address ("::", "[::1]") is IPv6 only: give 0.0.0.0 too for both families.
    std::vector<std::string> binds{"0.0.0.0"};
    unsigned short port = 8080;          ///< 0: the kernel picks one, logged at start-up
    std::optional<unsigned short> tls_port;  ///< --tls-port: HTTPS here too (0: the kernel picks one)
    std::filesystem::path certs_dir;         ///< --certs: watched for NAME.pem, NAME.crt + NAME.key
    bool tls_self_signed = false;            ///< no certificate serves: make one for localhost
    bool https_redirect = false;             ///< the plain port answers 308 to https://
    std::string user;                        ///< --user: workers' account when started as root (empty: nobody)
    std::filesystem::path handlers_dir;  ///< watched for NAME.so
    std::filesystem::path www_dir;       ///< static files
    unsigned workers = 1;                ///< worker processes under a master; 0 = one process, no master
    unsigned threads = 1;                ///< event loops per process, at least 1 (the command line sees to it)
    std::string log_level = "info";
    unsigned drain_timeout_s = 10;        ///< graceful stop waits this long for in-flight requests
    std::size_t max_connections = 10000;  ///< over all loops; more are answered 503 and closed
    bool strict_handler_modes = true;     ///< refuse handler files others could have written (sshd StrictModes)
    bool probes = true;                   ///< GET /-/healthy and /-/ready
    bool compile_sources = false;         ///< --compile: NAME.c / NAME.cpp are compiled and served too
    bool dev = false;                     ///< --dev: a source that does not compile answers 500 with diagnostics
    unsigned compile_timeout_s = 60;
    std::filesystem::path sdk_include;  ///< for --compile; empty: beside the binary, else the source tree
    bool status_endpoints = true;       ///< GET /-/status (JSON) and /metrics (Prometheus)
    std::vector<std::string> status_listen;  ///< "ADDR:PORT"s: serve those there only; none: on the main port
    unsigned quarantine_crashes = 3;    ///< this many crashes of one handler version…
    unsigned quarantine_window_s = 60;  ///< …within this many seconds quarantine it
    std::filesystem::path log_file;     ///< empty: stderr; else appended to, reopened on SIGUSR1
    std::filesystem::path access_log;   ///< empty: none; "-": standard output; reopened on SIGUSR1
    AccessLogFormat access_log_format = AccessLogFormat::combined;
    unsigned blocking_threads = 64;      ///< per worker, for CSP_BLOCKING_HANDLER calls
    std::size_t blocking_queue = 1024;   ///< calls waiting for one of them; past it: 503
    unsigned init_timeout_s = 10;        ///< loading and init (and cleanup) of a version tried this long at most
    bool vet_handlers = true;            ///< try each new version in a short-lived process first
    std::size_t worker_max_rss_mib = 0;  ///< a worker over this is replaced gracefully; 0 = off
    std::size_t kv_entries = 4096;       ///< the store all workers share (csp_kv_*); 0 = none
    std::size_t kv_value_max = 1024;     ///< bytes per value in it
    unsigned kv_quota_percent = 50;      ///< entries one handler may hold, percent of kv_entries
    unsigned handler_log_rate = 50;      ///< csp_log lines a second per handler version and process
    bool request_id_header = false;      ///< X-Request-Id on every response
    CompressionPolicy compression;       ///< --compress-*, --no-compress: which answers are compressed, how
    ClientLimitsConfig client_limits;    ///< --client-*: each client's request rate and open work
    ProxyTrust trusted_proxies;          ///< --trust-proxy, --trust-proxy-header: peers whose X-Forwarded-For (or Forwarded) names the client
    bool proxy_protocol = false;         ///< --proxy-protocol: every connection on --port / --tls-port opens with a PROXY header
    std::optional<ClusterOptions> cluster;  ///< --cluster*: topics across hosts over Redis
    std::size_t cache_mib = 32;          ///< the reply cache per worker (csp_reply_cache); 0 = off
    int static_max_age_s = -1;           ///< Cache-Control: max-age on static files; -1 = none
    unsigned slow_call_warn_ms = 50;     ///< a loop handler's call past this is logged and counted; 0 = never
    bool rollback = true;                ///< a quarantined version gives way to the one it replaced
    unsigned max_handlers = 256;         ///< handler names each loop counts (live or still in use); more are served uncounted
    std::filesystem::path server_folder;  ///< the master's: kept handler versions (set for its workers)
    SandboxConfig sandbox;

    /// Event loops over all processes.
    unsigned loops_total() const { return (workers == 0 ? 1 : workers) * threads; }
    /// The descriptors a worker is handed, by number.
    WorkerFds worker_fds() const {
        return {threads, static_cast<unsigned>(binds.size()), static_cast<unsigned>(status_listen.size())};
    }
};

}  // namespace cspd
