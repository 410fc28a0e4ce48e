/* Says who its code runs as: at init (in the vetting process, then in each worker) in the
 * log, and for each request in the reply. */
#include <csp/csp.h>

#include <unistd.h>

static int say_at_init(const csp_init_context *ctx, void **state) {
    (void)state;
    csp_init_log(ctx, CSP_LOG_INFO, "whoami init: uid %d euid %d gid %d", (int)getuid(), (int)geteuid(),
                 (int)getgid());
    return 0;
}

static int whoami(const csp_request *req, csp_reply *reply) {
    csp_log(req, CSP_LOG_INFO, "whoami call: uid %d", (int)getuid());
    csp_reply_printf(reply, "uid %d euid %d gid %d\n", (int)getuid(), (int)geteuid(), (int)getgid());
    return 200;
}

CSP_HANDLER_WITH_CONTEXT(whoami, say_at_init, NULL)
