/* GET /csp/large: a 1 MiB text body, built with many appends (the reply buffer grows as needed). */
#include <csp/csp.h>

static int large(const csp_request *req, csp_reply *reply) {
    (void)req;
    csp_reply_set_content_type(reply, "text/plain");
    for (int line = 0; line < 16384; ++line)  /* 16384 lines of 64 bytes */
        csp_reply_printf(reply, "%06d %-56s\n", line, "cspd large response line");
    return 200;
}

CSP_HANDLER(large)
