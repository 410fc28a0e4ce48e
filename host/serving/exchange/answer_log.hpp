// The access log's line for an answer, built once for every protocol: from what routing decided
// (a Routed) for an answer sent at once, or from its PendingExchange for one that came later.
// The session counts only what it sent (AnswerFacts::count_sent, count_parts). Loop thread only.
#pragma once

#include "serving/access_log.hpp"

#include <cstdint>

namespace cspd {

struct ClientInfo;
struct HttpRequest;
struct LoopContext;
struct Routed;
class PendingExchange;

/// The line for `request`, answered at once as `routed` says; `facts` holds the bytes sent and
/// when it was routed.
void log_routed_answer(LoopContext& loop, const ClientInfo& client, const HttpRequest& request, const Routed& routed,
                       AnswerFacts& facts);

/// The line for a pending exchange that ends with `status` sent (499: the client left first;
/// `intended_status`: what it was going to get, if known).
void log_pending_answer(LoopContext& loop, const ClientInfo& client, PendingExchange& pending, int status,
                        int intended_status = 0);

}  // namespace cspd
