// An HTTP/1 session's access log lines (--access-log; see http1_session.hpp): one per answer,
// written once the answer is handed to the transport, or, for a pending exchange, once it ends.
#include "serving/protocols/http1_session.hpp"

#include "common/clocks.hpp"
#include "serving/access_log.hpp"
#include "serving/loop_context.hpp"

#include <time.h>

#include <algorithm>

namespace cspd {
namespace {

std::int64_t unix_now_us() {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return std::int64_t(now.tv_sec) * 1'000'000 + now.tv_nsec / 1000;
}

}  // namespace

void Http1Session::log_access(const HttpRequest* request, const Answered& answered) {
    AccessRecord record;
    record.unix_us = unix_now_us();
    record.client_address = address_;
    record.client_port = port_;
    if (request) {
        record.method = request->method;
        record.target = request->target;
        record.http_major = request->http_major;
        record.http_minor = request->http_minor;
        record.referer = request->header("referer");
        record.user_agent = request->header("user-agent");
    }
    record.status = answered.status;
    record.intended_status = answered.intended_status;
    record.bytes = answered.bytes;
    record.body_bytes = answered.body_bytes;
    if (answered.began_ns)
        record.duration_us = static_cast<std::uint64_t>(std::max<std::int64_t>(0, monotonic_now_ns() - answered.began_ns) / 1000);
    record.responder = answered.responder;
    if (answered.handler) {
        record.handler = answered.handler->name();
        record.handler_hash = answered.handler->file().content_hash;
    }
    record.cached = answered.cached;
    record.request_id = answered.request_id;
    loop_.access->add(record);
}

void Http1Session::log_routed(const HttpRequest& request, const Routed& routed, std::size_t began,
                              std::uint64_t file_bytes, std::int64_t began_ns) {
    const std::string_view answer = std::string_view(loop_.output).substr(began);
    char id_text[RequestId::kMaxText];
    Answered answered;
    answered.status = code(routed.status);
    answered.bytes = answer.size() + file_bytes;
    answered.body_bytes = answered.bytes - response_head_size(answer);
    answered.began_ns = began_ns;
    answered.responder = routed.responder;
    answered.handler = routed.handler;
    answered.cached = routed.cached;
    answered.request_id = routed.request_id_header.empty() ? routed.id.format(id_text) : routed.request_id_header;
    log_access(&request, answered);
}

void Http1Session::log_pending(PendingExchange& pending, int status, int intended_status) {
    CallState& call = pending.call();
    Answered answered;
    answered.status = status;
    answered.intended_status = intended_status;
    answered.bytes = pending.sent.bytes;
    answered.body_bytes = pending.sent.bytes - pending.sent.head_bytes;
    answered.began_ns = pending.sent.began_ns;
    answered.responder = Responder::handler;
    answered.handler = call.version.get();
    answered.request_id = call.view.request_id();
    log_access(&call.view.request(), answered);
}

void Http1Session::log_refusal(HttpStatus status, std::size_t began) {
    const std::string_view answer = std::string_view(loop_.output).substr(began);
    Answered answered;
    answered.status = code(status);
    answered.bytes = answer.size();
    answered.body_bytes = answer.size() - response_head_size(answer);
    log_access(nullptr, answered);
}

}  // namespace cspd
