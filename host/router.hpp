// Decides what answers a request -- a /csp/ handler or a static file -- and
// appends the response to the connection's output. One Router per event loop;
// its scratch objects are reused by every request on that loop.
#pragma once

#include "date_cache.hpp"
#include "handler_table.hpp"
#include "http_request.hpp"
#include "sdk_bridge.hpp"
#include "static_files.hpp"

#include <string>
#include <string_view>

namespace cspd {

struct LoopSlot;
struct SharedStats;

struct ClientInfo {
    std::string_view address;  ///< "127.0.0.1"
    unsigned short port = 0;
    bool status_port = false;  ///< came in on --status-listen
};

class Router {
public:
    /// With `probes`, GET /-/healthy and /-/ready answer for load balancers and orchestrators;
    /// /-/ready says 503 once `*draining` is true.
    Router(const HandlerTable& handlers, const StaticFiles& www, DateCache& date, bool probes = true,
           const bool* draining = nullptr);

    /// Counts every response into `slot`; handler calls are timed and marked there for the
    /// watchdog; quarantined handler versions answer 503 with Retry-After: `retry_after_s`.
    /// GET /-/status and /metrics report `shared`: with `endpoints`, on every connection; with
    /// `on_status_port_only`, only on those accepted on the status listener.
    void attach_stats(SharedStats& shared, LoopSlot& slot, bool endpoints, unsigned retry_after_s,
                      bool on_status_port_only = false);

    /// Files at least this large are not copied into `out`: their body is sent from the file.
    static constexpr std::size_t kStreamFileBytes = 256 * 1024;

    /// Appends the response to `request` to `out`. For a large static file only the head goes
    /// into `out` and `body_file` is opened: its bytes follow the head on the wire.
    /// Returns the status sent.
    int respond(const HttpRequest& request, const ClientInfo& client, bool keep_alive, std::string& out,
                StaticFiles::File& body_file);

    /// True if the last response said "Connection: close" on its own account (a malformed request).
    bool close_after() const { return close_after_; }

private:
    struct Context;
    int route(const HttpRequest& request, const ClientInfo& client, bool keep_alive, std::string& out,
              StaticFiles::File& body_file);
    int run_handler(const HandlerTable::Entry& handler, const Context& ctx, std::string_view query, std::string& out);
    int serve_quarantined(const Context& ctx, std::string& out);
    int serve_report(const Context& ctx, bool metrics, std::string& out);
    int serve_static(const Context& ctx, std::string& out, StaticFiles::File& body_file);
    int serve_probe(const Context& ctx, bool ready_probe, std::string& out);
    int error(const Context& ctx, int status, std::string& out);

    const HandlerTable& handlers_;
    const StaticFiles& www_;
    DateCache& date_;
    bool probes_;
    const bool* draining_;
    std::string decoded_path_;
    bool close_after_ = false;
    SharedStats* shared_ = nullptr;
    LoopSlot* slot_ = nullptr;
    bool status_endpoints_ = false;
    bool status_port_only_ = false;
    unsigned retry_after_s_ = 60;
    HandlerRequestView view_;
    HandlerReply reply_;
};

} // namespace cspd
