#include "routing/handler_call.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "common/cycle_clock.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

namespace cspd {
namespace {

/// Marks a handler call in the loop's slot (the master's watchdog reads it) and, on the
/// way out, counts it into the handler's latency histogram.
class TimedCall {
public:
    TimedCall(LoopSlot* slot, HandlerStats* stats) : slot_(slot), stats_(stats) {
        if (!slot_) return;
        slot_->running_handler.store(stats_ ? static_cast<std::uint32_t>(stats_ - slot_->handlers) + 1 : 0,
                                     std::memory_order_relaxed);
        // The watchdog works in seconds: the coarse clock (a few ns, not ~27) is enough for it.
        // Release: the master reading this start also sees which handler it belongs to.
        slot_->handler_started_ns.store(coarse_monotonic_now_ns(), std::memory_order_release);
        started_ = CycleClock::now();
    }
    ~TimedCall() {
        if (!slot_) return;
        // Signed: a thread moved to a core whose counter lags reads a small negative time, not 2^64.
        const auto elapsed = static_cast<std::int64_t>(CycleClock::now() - started_);
        slot_->handler_started_ns.store(0, std::memory_order_relaxed);
        if (!stats_) return;
        const double ns = elapsed > 0 ? std::min(CycleClock::to_ns(std::uint64_t(elapsed)), 1e15) : 0.0;
        unsigned bucket = 0;
        while (bucket < std::size(kLatencyBounds) && ns > kLatencyBounds[bucket] * 1e9) ++bucket;
        bump(stats_->latency[bucket]);
        bump(stats_->latency_sum_ns, static_cast<std::uint64_t>(ns));
    }
    TimedCall(const TimedCall&) = delete;
    TimedCall& operator=(const TimedCall&) = delete;

private:
    LoopSlot* slot_;
    HandlerStats* stats_;
    std::uint64_t started_ = 0;
};

}  // namespace

void HandlerCall::attach_stats(LoopSlot& slot) {
    slot_ = &slot;
    CycleClock::calibrate();
}

HttpStatus HandlerCall::run(const HandlerTable::Entry& entry, Exchange& exchange, std::string_view query) {
    const HandlerVersion& handler = *entry.version;
    HandlerStats* stats = slot_ ? entry.stats : nullptr;
    const HttpRequest& request = exchange.request;
    reply_.reset();
    view_.bind(request, exchange.path, query, exchange.client.address, exchange.client.port, handler.state());
    const auto failed = [&] {
        if (stats) bump(stats->errors), bump(stats->requests[status_class(500)]);
        return exchange.error(HttpStatus::internal_server_error);
    };
    int returned;
    try {
        TimedCall timed(slot_, stats);
        RunningHandler marker(handler.label());  // named in the crash report if this call brings the process down
        returned = handler.handle(view_.raw(), reply_.raw());
    } catch (const std::exception& e) {
        spdlog::error("handler {}: threw on {} {}: {}", handler.describe(), request.method, exchange.path, e.what());
        return failed();
    } catch (...) {
        spdlog::error("handler {}: threw a non-std exception on {} {}", handler.describe(), request.method,
                      exchange.path);
        return failed();
    }
    if (!reply_.consistent()) {
        spdlog::error("handler {}: left its reply buffer inconsistent (size beyond capacity, or moved data)",
                      handler.describe());
        return failed();
    }
    const std::optional<HttpStatus> status = from_handler(returned);
    if (!status) {
        spdlog::error("handler {}: returned invalid HTTP status {}", handler.describe(), returned);
        return failed();
    }
    if (stats) bump(stats->requests[status_class(code(*status))]);
    ResponseHead head = exchange.head(*status, reply_.content_type());
    head.extra_headers = reply_.extra_headers();
    return exchange.send(head, reply_.body());
}

}  // namespace cspd
