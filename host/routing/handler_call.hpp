// Runs one handler call for the router: binds the request view and the reply buffer,
// times the call and marks it for the watchdog and the crash reporter, checks what the
// handler left, and appends the response. Every way a call can fail ends in one place:
// counted as the handler's error, answered 500, logged with the handler's name.
#pragma once

#include "handler/sdk_bridge.hpp"
#include "handler/table.hpp"
#include "routing/exchange.hpp"

#include <string_view>

namespace cspd {

struct LoopSlot;

class HandlerCall {
public:
    /// From now on calls are timed and counted in `slot`.
    void attach_stats(LoopSlot& slot);

    /// Calls `handler` for the exchange; `query` is the raw query string.
    HttpStatus run(const HandlerTable::Entry& handler, Exchange& exchange, std::string_view query);

private:
    LoopSlot* slot_ = nullptr;
    HandlerRequestView view_;  // reused by every call on this loop: the request path does not allocate
    HandlerReply reply_;
};

}  // namespace cspd
