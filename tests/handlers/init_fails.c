/* Its init hook fails: the load must be refused and any older version keep serving. */
#include <csp/csp.h>

static int handle(const csp_request *req, csp_reply *reply) {
    (void)req;
    csp_reply_puts(reply, "should never be served");
    return 200;
}

static int init(void **state) {
    (void)state;
    return 7;
}

CSP_HANDLER_WITH_HOOKS(handle, init, NULL)
