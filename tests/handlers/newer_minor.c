/* Built against a newer minor of ABI 2 than this host's: must be refused, naming both. */
#include <csp/csp.h>

static int handle(const csp_request *req, csp_reply *reply) {
    (void)req;
    csp_reply_puts(reply, "should never be served");
    return 200;
}

CSP_EXTERN_C CSP_EXPORT const csp_handler_descriptor csp_handler = {
    (CSP_ABI_MAJOR << 16) | (CSP_ABI_MINOR + 1), sizeof(csp_handler_descriptor), handle, NULL, NULL, 0u, NULL};
