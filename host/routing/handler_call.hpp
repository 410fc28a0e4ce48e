// Runs one handler call for the router: binds the request view and the reply buffer in
// the handler's ABI, times the call and marks it for the watchdog and the crash reporter,
// checks what the handler left, and sends the response. Every way a call can fail ends
// in one place: counted as the handler's error, answered 500, logged with the handler's name.
//
// A call whose answer is pending -- the handler deferred it, or it is a blocking handler's --
// is handed, with its own view and reply, to the protocol session's PendingCalls, which makes
// it a pending exchange (serving/exchange); that answers it with HandlerCall::answer when it is
// finished.
#pragma once

#include "handler/sdk_bridge.hpp"
#include "handler/table.hpp"
#include "limits/client_limits.hpp"
#include "routing/exchange.hpp"
#include "routing/handler_answer.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace cspd {

struct HandlerStats;
struct LoopSlot;

/// One handler call's objects. The loop reuses one for every call that answers at once; a call
/// whose answer comes later keeps its own until then.
struct CallState {
    HandlerRequestView view;
    HandlerReply reply;
    std::shared_ptr<const HandlerVersion> version;  ///< pins the code that owes the answer
    HandlerStats* stats = nullptr;                  ///< the handler's counters, or null
    std::uint64_t elapsed_ns = 0;                   ///< a blocking call's time, measured on its thread
    /// A WebSocket handshake's unit of --client-connections for the client a trusted proxy named:
    /// the conversation takes it if the handler accepts, else it goes when the call has answered.
    ClientUnit client_unit;
};

/// Where calls whose answer is pending go: the protocol session that routed the request
/// (serving/ implements it), which makes each a pending exchange.
class PendingCalls {
public:
    /// The handler deferred its reply: take `call` over (and leave it empty), or return null.
    virtual PendingReply* adopt(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept = 0;
    /// A blocking handler's call: run it off the loop and answer later (taking `call` over);
    /// false when every thread is busy and the queue is full.
    virtual bool run_blocking(std::unique_ptr<CallState>& call, const ResponseFrame& frame) noexcept = 0;
    /// The handler accepts its request as a WebSocket (csp_ws_accept): the conversation that
    /// follows the 101, pinning `version` and counted in `stats`; null where the protocol cannot
    /// carry one (the handler then answers as usual).
    /// `extensions` gets the Sec-WebSocket-Extensions the 101 says (empty: none).
    virtual WebSocketChannel* accept_websocket(const HttpRequest& request, const csp_ws_callbacks& callbacks,
                                               std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                               std::string& extensions) noexcept {
        (void)request, (void)callbacks, (void)version, (void)stats, (void)extensions;
        return nullptr;
    }

protected:
    ~PendingCalls() = default;
};

/// What came of a call.
enum class CallOutcome { answered, pending, pool_full };

class HandlerCall {
public:
    HandlerCall();

    /// From now on calls are timed and counted in `slot`.
    void attach_stats(LoopSlot& slot);
    /// A call on the loop longer than this is logged and counted (--slow-call-warn; 0: never).
    void warn_past(std::uint32_t milliseconds) { slow_call_ns_ = std::uint64_t(milliseconds) * 1'000'000; }

    /// Calls `handler` for the exchange (`path_info`: the path after /csp/NAME; `query`: raw).
    /// With `pending`, a blocking handler runs on the pool and a handler may defer; without, both
    /// answer at once on this thread. `status` is set when the outcome is `answered`.
    CallOutcome run(const HandlerTable::Entry& handler, Exchange& exchange, std::string_view path_info,
                    std::string_view query, PendingCalls* pending, CallStatus& status);

    /// Checks what a finished call left (`returned`: the status it gave; empty if it threw, which
    /// is logged already), counts it, sends the response to `sink`. On the loop that routed the call.
    static CallStatus answer(CallState& call, const HandlerVersion& version, const std::optional<int>& returned,
                             const ResponseFrame& frame, ResponseSink& sink);

    /// Runs a blocking handler's call on the calling thread (a pool thread), timed into
    /// call.elapsed_ns and marked for the crash report: the status it returned, or empty if it
    /// threw (logged). Deferring is not offered there: a blocking handler may simply wait.
    static std::optional<int> run_blocking_call(CallState& call);

    /// The handler accepted its request as a WebSocket (`returned`: what it returned, empty if it
    /// threw): counts it and sends the accepting answer to `sink`, HTTP/1.1's 101 or HTTP/2's 200,
    /// with the fields the handler set. On the loop that routed the call.
    /// (Every accept_websocket makes the link; this answers for it.)
    static CallStatus answer_websocket(CallState& call, const HandlerVersion& version,
                                       const std::optional<int>& returned, const HttpRequest& request,
                                       ResponseSink& sink);

    /// After run() answered: the call's objects, until the next run().
    const CallState* answered() const { return current_.get(); }

private:
    void held_the_loop(const HandlerVersion& handler, HandlerStats* stats, std::uint64_t elapsed_ns);

    struct Hook final : PendingReply::Source, WebSocketChannel::Source {
        HandlerCall* self = nullptr;
        PendingReply* defer() noexcept override;
        WebSocketChannel* accept_websocket(const csp_ws_callbacks& callbacks) noexcept override;
    };

    LoopSlot* slot_ = nullptr;
    std::unique_ptr<CallState> current_;  // reused until a call that answers later takes it
    Hook hook_;
    // What the hook needs while a call runs.
    const HandlerTable::Entry* entry_ = nullptr;
    PendingCalls* pending_ = nullptr;
    ResponseFrame frame_;
    std::uint64_t slow_call_ns_ = 50'000'000;
    std::uint32_t last_slow_log_ms_ = 0;
    std::uint32_t slow_calls_unsaid_ = 0;
    bool slow_calls_logged_ = false;
};

} // namespace cspd
