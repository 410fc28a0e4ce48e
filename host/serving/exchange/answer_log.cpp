#include "serving/exchange/answer_log.hpp"

#include "routing/router.hpp"
#include "serving/exchange/pending_exchange.hpp"
#include "serving/loop_context.hpp"

namespace cspd {

void log_routed_answer(LoopContext& loop, const ClientInfo& client, const HttpRequest& request, const Routed& routed,
                       AnswerFacts& facts) {
    char id_text[RequestId::kMaxText];
    facts.status = static_cast<int>(code(routed.status));
    facts.responder = routed.responder;
    if (routed.handler) {
        facts.handler = routed.handler->name();
        facts.handler_hash = routed.handler->file().content_hash;
    }
    facts.cached = routed.cached;
    facts.request_id = routed.request_id_header.empty() ? routed.id.format(id_text) : routed.request_id_header;
    loop.access->add(client, &request, facts);
}

void log_pending_answer(LoopContext& loop, const ClientInfo& client, PendingExchange& pending, int status,
                        int intended_status) {
    CallState& call = pending.call();
    AnswerFacts& facts = pending.access;
    facts.status = status;
    facts.intended_status = intended_status;
    facts.responder = Responder::handler;
    if (call.version) {
        facts.handler = call.version->name();
        facts.handler_hash = call.version->file().content_hash;
    }
    facts.request_id = call.view.request_id();
    loop.access->add(client, &call.view.request(), facts);
}

}  // namespace cspd
