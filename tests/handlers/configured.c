/* Init with a context (SDK 2.2): keeps its name, its worker, and its configuration, and answers
 *   "name=N worker=I/C greeting=G keys=K1,K2,"
 * Its init refuses (returns 1) when the configuration says fail = yes, and logs one line. */
#include <csp/csp.h>

#include <stdio.h>
#include <stdlib.h>

struct state {
    char text[1024];
};

static int init(const csp_init_context *ctx, void **out) {
    csp_str fail = csp_config(ctx, "fail");
    if (csp_str_is(fail, "yes")) return 1;
    struct state *s = malloc(sizeof *s);
    if (!s) return 1;
    csp_str greeting = csp_config(ctx, "greeting");
    int n = snprintf(s->text, sizeof s->text, "name=%.*s worker=%u/%u greeting=%.*s keys=", (int)ctx->name.size,
                     ctx->name.data, ctx->worker_index, ctx->worker_count,
                     greeting.data ? (int)greeting.size : 6, greeting.data ? greeting.data : "(none)");
    csp_str key, value;
    for (size_t i = 0; csp_config_at(ctx, i, &key, &value) == 0 && n > 0 && (size_t)n < sizeof s->text; ++i)
        n += snprintf(s->text + n, sizeof s->text - (size_t)n, "%.*s,", (int)key.size, key.data);
    csp_init_log(ctx, CSP_LOG_INFO, "configured as worker %u of %u", ctx->worker_index, ctx->worker_count);
    *out = s;
    return 0;
}

static void cleanup(void *state) { free(state); }

static int configured(const csp_request *req, csp_reply *reply) {
    const struct state *s = req->state;
    csp_reply_set_content_type(reply, "text/plain");
    csp_reply_puts(reply, s->text);
    return 200;
}

CSP_HANDLER_WITH_CONTEXT(configured, init, cleanup)
