/* GET /csp/visits -> "visit N": one count for the whole server, kept in the store every worker
 * shares (csp_kv_add is atomic across workers), so two workers never show two different counts.
 * The count outlives worker restarts and reloads of this handler. */
#include <csp/csp.h>

static int visits(const csp_request *req, csp_reply *reply) {
    const int64_t n = csp_kv_add(req, "visits:count", 1);
    csp_reply_set_content_type(reply, "text/plain");
    if (n == CSP_KV_ERROR) {
        csp_reply_puts(reply, "the shared store is unavailable\n");
        return 503;
    }
    csp_reply_printf(reply, "visit %lld\n", (long long)n);
    return 200;
}

CSP_HANDLER(visits)
