#include "routing/handler_call.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "common/cycle_clock.hpp"
#include "routing/handler_preconditions.hpp"
#include "stats/shared_stats.hpp"
#include "stats/watchdog_mark.hpp"
#include "websocket/handshake.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace cspd {
namespace {

void record_latency(HandlerStats* stats, double ns) {
    if (!stats) return;
    ns = std::clamp(ns, 0.0, 1e15);
    unsigned bucket = 0;
    while (bucket < std::size(kLatencyBounds) && ns > kLatencyBounds[bucket] * 1e9) ++bucket;
    bump(stats->latency[bucket]);
    bump(stats->latency_sum_ns, static_cast<std::uint64_t>(ns));
}

/// Marks a handler call in the loop's slot (the master's watchdog reads it) and, on the
/// way out, counts it into the handler's latency histogram.
class TimedCall {
public:
    /// `elapsed_ns` gets the call's time.
    TimedCall(LoopSlot* slot, HandlerStats* stats, std::uint64_t& elapsed_ns)
        : mark_(slot, stats), slot_(slot), stats_(stats), elapsed_ns_(elapsed_ns) {
        if (slot_) started_ = CycleClock::now();
    }
    ~TimedCall() {
        if (!slot_) return;
        // Signed: a thread moved to a core whose counter lags reads a small negative time, not 2^64.
        const auto elapsed = static_cast<std::int64_t>(CycleClock::now() - started_);
        const double ns = elapsed > 0 ? CycleClock::to_ns(std::uint64_t(elapsed)) : 0.0;
        elapsed_ns_ = static_cast<std::uint64_t>(ns);
        record_latency(stats_, ns);
    }
    TimedCall(const TimedCall&) = delete;
    TimedCall& operator=(const TimedCall&) = delete;

private:
    WatchdogMark mark_;  // cleared after the time is taken (members end in reverse order)
    LoopSlot* slot_;
    HandlerStats* stats_;
    std::uint64_t& elapsed_ns_;
    std::uint64_t started_ = 0;
};

CallStatus failed(CallState& call, const ResponseFrame& frame, ResponseSink& sink) {
    if (call.stats) bump(call.stats->errors), bump(call.stats->requests[status_class(500)]);
    sink.send(error_response(HttpStatus::internal_server_error,
                             frame.request_id_header ? call.view.request_id() : std::string_view{}),
              frame);
    return {HttpStatus::internal_server_error, HttpStatus::internal_server_error};
}

} // namespace

HandlerCall::HandlerCall() : current_(std::make_unique<CallState>()) { hook_.self = this; }

void HandlerCall::held_the_loop(const HandlerVersion& handler, HandlerStats* stats, std::uint64_t elapsed_ns) {
    if (stats) bump(stats->slow_calls);
    // Said at most once a second per loop (a slow handler is slow on every call), with a count
    // of those not said.
    const std::uint32_t now = coarse_now_ms();
    if (slow_calls_logged_ && now - last_slow_log_ms_ < 1000) {
        ++slow_calls_unsaid_;
        return;
    }
    spdlog::warn("handler {}: a call held its event loop {:.0f} ms (--slow-call-warn {} ms), and every other "
                 "connection of that loop waited{}; a handler that waits on I/O or sleeps should be declared "
                 "blocking (CSP_BLOCKING_HANDLER) or defer its reply (csp_reply_defer)",
                 handler.describe(), double(elapsed_ns) / 1e6, slow_call_ns_ / 1'000'000,
                 slow_calls_unsaid_ ? fmt::format(" ({} more slow calls on this loop since the last warning)",
                                                  slow_calls_unsaid_)
                                    : std::string());
    slow_calls_logged_ = true;
    slow_calls_unsaid_ = 0;
    last_slow_log_ms_ = now;
}

void HandlerCall::attach_stats(LoopSlot& slot) {
    slot_ = &slot;
    CycleClock::calibrate();
}

PendingReply* HandlerCall::Hook::defer() noexcept {
    HandlerCall& call = *self;
    if (!call.pending_ || !call.current_) return nullptr;
    call.current_->version = call.entry_->version;  // pinned: a reload never unloads code that owes an answer
    call.current_->client_unit.reset();  // a deferred answer is no WebSocket
    return call.pending_->adopt(call.current_, call.frame_);
}

WebSocketChannel* HandlerCall::Hook::accept_websocket(const csp_ws_callbacks& callbacks) noexcept {
    HandlerCall& call = *self;
    if (!call.pending_ || !call.current_) return nullptr;
    WebSocketChannel* channel = call.pending_->accept_websocket(call.current_->view.request(), callbacks,
                                                                call.entry_->version, call.current_->stats,
                                                                call.current_->reply.websocket_extensions_);
    if (channel) channel->client_unit = std::move(call.current_->client_unit);
    return channel;
}

CallOutcome HandlerCall::run(const HandlerTable::Entry& entry, Exchange& exchange, std::string_view path_info,
                             std::string_view query, PendingCalls* pending, CallStatus& status) {
    const HandlerVersion& handler = *entry.version;
    const HttpRequest& request = exchange.request;
    if (!current_) current_ = std::make_unique<CallState>();  // the last one answers later
    CallState& call = *current_;
    call.stats = slot_ ? entry.stats : nullptr;
    call.reply.reset(handler.abi());
    call.view.bind(request,
                   {exchange.path, path_info, query, exchange.client.address, exchange.client.port, handler.state(),
                    &handler, exchange.id},
                   handler.abi());
    if (exchange.client_unit) call.client_unit = std::move(*exchange.client_unit);
    const ResponseFrame frame = exchange.frame();
    if (handler.blocking() && pending) {
        call.version = entry.version;
        if (pending->run_blocking(current_, frame)) return CallOutcome::pending;
        call.version.reset();
        call.client_unit.reset();
        return CallOutcome::pool_full;
    }
    entry_ = &entry;
    pending_ = pending;
    frame_ = frame;
    call.reply.set_pending_source(pending ? &hook_ : nullptr);
    call.reply.set_websocket_source(pending ? &hook_ : nullptr);
    std::optional<int> returned;
    std::uint64_t elapsed_ns = 0;
    try {
        TimedCall timed(slot_, call.stats, elapsed_ns);
        RunningHandler marker(handler.label());  // named in the crash report if this call brings the process down
        returned = handler.handle(call.view.raw(), call.view.raw_v1(), call.reply.raw());
    } catch (const std::exception& e) {
        spdlog::error("handler {}: threw on {} {}: {}", handler.describe(), request.method, exchange.path, e.what());
    } catch (...) {
        spdlog::error("handler {}: threw a non-std exception on {} {}", handler.describe(), request.method,
                      exchange.path);
    }
    pending_ = nullptr;
    if (slow_call_ns_ && elapsed_ns > slow_call_ns_) held_the_loop(handler, call.stats, elapsed_ns);
    if (!current_) {
        // The handler deferred: its reply comes through csp_pending_finish, whatever it returned.
        if (returned != CSP_DEFERRED)
            spdlog::warn("handler {}: deferred its reply but returned {}; the reply waits for csp_pending_finish",
                         handler.describe(), returned ? std::to_string(*returned) : "by throwing");
        return CallOutcome::pending;
    }
    call.reply.set_pending_source(nullptr);
    call.reply.set_websocket_source(nullptr);
    call.client_unit.reset();  // still here: no conversation took it
    if (call.reply.websocket()) {
        status = answer_websocket(call, handler, returned, request, exchange.sink());
        return CallOutcome::answered;
    }
    status = answer(call, handler, returned, frame, exchange.sink());
    return CallOutcome::answered;
}

CallStatus HandlerCall::answer_websocket(CallState& call, const HandlerVersion& handler,
                                         const std::optional<int>& returned, const HttpRequest& request,
                                         ResponseSink& sink) {
    if (call.elapsed_ns) record_latency(call.stats, double(call.elapsed_ns));  // a blocking call's
    // The conversation is the session's already: whatever the handler returned, the 101 goes.
    if (returned != CSP_WS_ACCEPTED)
        spdlog::warn("handler {}: accepted a WebSocket but returned {}; the 101 is sent all the same",
                     handler.describe(), returned ? std::to_string(*returned) : "by throwing");
    // HTTP/2 accepts with a 200 (RFC 8441), HTTP/1.1 with its 101.
    const HttpStatus accepted = request.http_major == 2 ? HttpStatus::ok : HttpStatus::switching_protocols;
    if (call.stats) bump(call.stats->requests[status_class(code(accepted))]);
    // HTTP/1.1's 101 says the upgrade and the key's answer; HTTP/2's 200 (RFC 8441 §5) neither.
    std::string accept;
    std::vector<ResponseField> fields;
    if (accepted == HttpStatus::switching_protocols) {
        accept = ws::accept_key(request.header("sec-websocket-key"));
        fields.push_back({"Upgrade", "websocket"});
        fields.push_back({"Connection", "Upgrade"});
        fields.push_back({"Sec-WebSocket-Accept", accept});
    }
    if (!call.reply.websocket_protocol().empty()) fields.push_back({"Sec-WebSocket-Protocol", call.reply.websocket_protocol()});
    if (!call.reply.websocket_extensions().empty())
        fields.push_back({"Sec-WebSocket-Extensions", call.reply.websocket_extensions()});
    const std::span<const ResponseField> set = call.reply.fields().list();
    fields.insert(fields.end(), set.begin(), set.end());
    Response response;
    response.status = accepted;
    response.fields = fields;
    response.body_kind = BodyKind::stream;  // the conversation
    sink.send(response, ResponseFrame{});
    return {accepted, accepted};
}

CallStatus HandlerCall::answer(CallState& call, const HandlerVersion& handler, const std::optional<int>& returned,
                               const ResponseFrame& frame, ResponseSink& sink) {
    if (call.elapsed_ns) record_latency(call.stats, double(call.elapsed_ns));
    if (!returned) return failed(call, frame, sink);  // threw: already logged
    if (!call.reply.consistent()) {
        spdlog::error("handler {}: left its reply buffer inconsistent (size beyond capacity, or moved data)",
                      handler.describe());
        return failed(call, frame, sink);
    }
    const std::optional<HttpStatus> status = from_handler(*returned);
    if (!status) {
        if (*returned == CSP_DEFERRED)
            spdlog::error("handler {}: returned CSP_DEFERRED without csp_reply_defer", handler.describe());
        else
            spdlog::error("handler {}: returned invalid HTTP status {}", handler.describe(), *returned);
        return failed(call, frame, sink);
    }
    const HandlerAnswer answer{*status, call.reply.content_type(), call.reply.fields().list(), call.reply.body(),
                               call.reply.compress()};
    // The id is looked up and formatted only when the answer says it (--request-id-header).
    return send_handler_answer(answer, call.view.request(), frame,
                               frame.request_id_header ? call.view.request_id() : std::string_view{}, call.stats,
                               sink);
}

std::optional<int> HandlerCall::run_blocking_call(CallState& call) {
    const HandlerVersion& handler = *call.version;
    const std::int64_t started = monotonic_now_ns();
    std::optional<int> returned;
    try {
        RunningHandler marker(handler.label());
        returned = handler.handle(call.view.raw(), call.view.raw_v1(), call.reply.raw());
    } catch (const std::exception& e) {
        spdlog::error("handler {}: threw: {}", handler.describe(), e.what());
    } catch (...) {
        spdlog::error("handler {}: threw a non-std exception", handler.describe());
    }
    call.elapsed_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(1, monotonic_now_ns() - started));
    return returned;
}

} // namespace cspd
