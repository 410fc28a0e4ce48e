// Built twice, with -DHANDLER_VERSION=1 and =2: reload tests tell versions apart by the body.
#include <csp/csp.h>

#define STR2(x) #x
#define STR(x) STR2(x)

static int versioned(const csp_request*, csp_reply* reply) {
    csp_reply_set_content_type(reply, "text/plain");
    csp_reply_puts(reply, "version " STR(HANDLER_VERSION));
    return 200;
}

CSP_HANDLER(versioned)
