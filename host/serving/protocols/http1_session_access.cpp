// An HTTP/1 session's access log lines (--access-log; see http1_session.hpp): one per answer,
// written once the answer is handed to the transport, or, for a pending exchange, once it ends.
#include "serving/protocols/http1_session.hpp"

#include "serving/access_log.hpp"
#include "serving/exchange/pending_start.hpp"
#include "serving/loop_context.hpp"

namespace cspd {

void Http1Session::log_routed(const HttpRequest& request, const Routed& routed, std::size_t began,
                              std::uint64_t file_bytes, std::int64_t began_ns) {
    char id_text[RequestId::kMaxText];
    AnswerFacts facts;
    facts.status = code(routed.status);
    facts.count_sent(std::string_view(loop_.output).substr(began));
    facts.bytes += file_bytes;
    facts.body_bytes += file_bytes;
    facts.began_ns = began_ns;
    facts.responder = routed.responder;
    if (routed.handler) {
        facts.handler = routed.handler->name();
        facts.handler_hash = routed.handler->file().content_hash;
    }
    facts.cached = routed.cached;
    facts.request_id = routed.request_id_header.empty() ? routed.id.format(id_text) : routed.request_id_header;
    loop_.access->add(client(), &request, facts);
}

void Http1Session::log_pending(PendingExchange& pending, int status, int intended_status) {
    log_pending_answer(loop_, client(), pending, status, intended_status);
}

void Http1Session::log_refusal(HttpStatus status, std::size_t began) {
    AnswerFacts facts;
    facts.status = code(status);
    facts.count_sent(std::string_view(loop_.output).substr(began));
    loop_.access->add(client(), nullptr, facts);
}

}  // namespace cspd
