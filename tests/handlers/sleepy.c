/* A plain (loop) handler that does what a loop handler must not: sleeps ?ms= milliseconds on
 * its event loop, as a synchronous database call would. */
#include <csp/csp.h>

#include <stdlib.h>
#include <unistd.h>

static int sleepy(const csp_request *req, csp_reply *reply) {
    csp_str ms = csp_query_arg(req, "ms");
    if (ms.data) {
        char text[16];
        snprintf(text, sizeof text, "%.*s", (int)ms.size, ms.data);
        usleep((useconds_t)atoi(text) * 1000u);
    }
    csp_reply_puts(reply, "slept\n");
    return 200;
}

CSP_HANDLER(sleepy)
