/* Claims an SDK ABI major this host does not speak (3.0): must be refused. */
#include <csp/csp.h>

static int handle(const csp_request *req, csp_reply *reply) {
    (void)req;
    csp_reply_puts(reply, "should never be served");
    return 200;
}

CSP_EXTERN_C CSP_EXPORT const csp_handler_descriptor csp_handler = {
    3u << 16, sizeof(csp_handler_descriptor), handle, NULL, NULL, 0u, NULL};
