/* GET /csp/visits -> "visit N": a counter kept across requests, from init to cleanup. */
#include <csp/csp.h>

#include <stdatomic.h>
#include <stdlib.h>

static int init(void **state) {
    atomic_ulong *count = malloc(sizeof *count);
    if (!count) return 1;
    atomic_init(count, 0);
    *state = count;
    return 0;
}

static void cleanup(void *state) { free(state); }

static int visits(const csp_request *req, csp_reply *reply) {
    unsigned long n = atomic_fetch_add((atomic_ulong *)req->state, 1) + 1;
    csp_reply_set_content_type(reply, "text/plain");
    csp_reply_printf(reply, "visit %lu\n", n);
    return 200;
}

CSP_HANDLER_WITH_HOOKS(visits, init, cleanup)
