/* csp_limit as a handler uses it: each API key (?key=) may call 2 times a second after a burst of
 * 3, across every worker of the host; a key over it is answered with csp_reply_too_many.
 * ?rate=R sets another rate (requests a second). */
#include <csp/csp.h>

#include <stdlib.h>
#include <string.h>

static int keyed_limit(const csp_request *req, csp_reply *reply) {
    char key[64] = "anonymous", rate_text[32] = "2";
    csp_str k = csp_query_arg(req, "key"), r = csp_query_arg(req, "rate");
    if (k.data && k.size < sizeof key) {
        memcpy(key, k.data, k.size);
        key[k.size] = '\0';
    }
    if (r.data && r.size < sizeof rate_text) {
        memcpy(rate_text, r.data, r.size);
        rate_text[r.size] = '\0';
    }
    const unsigned wait = csp_limit(req, key, atof(rate_text), 3);
    if (wait) return csp_reply_too_many(reply, wait);
    csp_reply_printf(reply, "key %s let in\n", key);
    return 200;
}

CSP_HANDLER(keyed_limit)
