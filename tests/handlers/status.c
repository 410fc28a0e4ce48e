/* Answers with the status given in ?code=, to test status handling (invalid ones become 500).
 * ?lie=1 claims a reply larger than its buffer, as a buggy handler writing the fields might. */
#include <csp/csp.h>

#include <stdlib.h>

static int status(const csp_request *req, csp_reply *reply) {
    csp_str code = csp_query_arg(req, "code");
    if (csp_query_arg(req, "lie").data) {
        reply->size = reply->capacity + 4096;
        return 200;
    }
    csp_reply_puts(reply, "status test");
    if (!code.data) return 200;
    char text[16] = {0};
    size_t n = code.size < sizeof text - 1 ? code.size : sizeof text - 1;
    for (size_t i = 0; i < n; ++i) text[i] = code.data[i];
    csp_reply_add_header(reply, "Location", "/elsewhere");
    return atoi(text);
}

CSP_HANDLER(status)
