/* A blocking handler (CSP_BLOCKING_HANDLER), as a synchronous database call is: it creates
 * the file named by ?mark= when its call begins, then waits until the file named by
 * ?barrier= exists (at most 60 s), or for ?ms= milliseconds. */
#include <csp/csp.h>

#include <stdlib.h>
#include <unistd.h>

static void path_of(csp_str s, char *path, size_t size) { snprintf(path, size, "%.*s", (int)s.size, s.data); }

static int slow(const csp_request *req, csp_reply *reply) {
    csp_str mark = csp_query_arg(req, "mark");
    if (mark.data) {
        char path[512];
        path_of(mark, path, sizeof path);
        FILE *f = fopen(path, "w");
        if (f) fclose(f);
    }
    csp_str barrier = csp_query_arg(req, "barrier");
    csp_str ms = csp_query_arg(req, "ms");
    if (barrier.data) {
        char path[512];
        path_of(barrier, path, sizeof path);
        for (int waited = 0; waited < 60000 && access(path, F_OK) != 0; ++waited) usleep(1000);
    } else if (ms.data) {
        char text[16];
        snprintf(text, sizeof text, "%.*s", (int)ms.size, ms.data);
        usleep((useconds_t)atoi(text) * 1000u);
    }
    csp_reply_set_content_type(reply, "text/plain");
    csp_str tag = csp_header(req, "X-Tag");
    csp_reply_printf(reply, "slow done%.*s", (int)req->path_info.size, req->path_info.data);
    if (tag.data) csp_reply_printf(reply, " tag=%.*s", (int)tag.size, tag.data);
    csp_reply_puts(reply, "\n");
    return 200;
}

CSP_BLOCKING_HANDLER(slow)
