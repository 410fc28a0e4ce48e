// GET /csp/hello -> <h1>HELLO WORLD</h1>, the G-WAN servlet the benchmarks grew from.
#include <csp/csp.h>

static int hello(const csp_request*, csp_reply* reply) {
    static constexpr char body[] = "<h1>HELLO WORLD</h1>";
    csp_reply_set_content_type(reply, "text/html");
    csp_reply_append(reply, body, sizeof body - 1);
    return 200;
}

CSP_HANDLER(hello)
