/* GET /csp/go?to=/somewhere: a redirect (302 + Location). Only local paths, never another site. */
#include <csp/csp.h>

#include <stdio.h>

static int go(const csp_request *req, csp_reply *reply) {
    csp_str to = csp_query_arg(req, "to");
    /* "//host" and "/\\host" would send the browser to another site. */
    if (!to.data || to.size == 0 || to.data[0] != '/' || (to.size > 1 && (to.data[1] == '/' || to.data[1] == '\\'))) {
        csp_reply_puts(reply, "?to= must be a local path like /index.html\n");
        return 400;
    }
    char location[512];
    snprintf(location, sizeof location, "%.*s", (int)to.size, to.data);
    if (csp_reply_add_header(reply, "Location", location) != 0) return 400;
    csp_reply_printf(reply, "see %s\n", location);
    return 302;
}

CSP_HANDLER(go)
