/* For bench/compress.py: a document read once, at init, from DOC_DIR (a compile-time define):
 * /csp/document?doc=json (16 KiB of JSON) or ?doc=html (100 KiB of HTML), copied into the reply
 * on every call, so the host compresses it on every call as nginx does a file with gzip on;
 * &cache=1 asks the reply cache to keep it (csp_reply_cache). */
#include <csp/csp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *json, *html;
    size_t json_size, html_size;
} documents;

static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = n > 0 ? malloc((size_t)n) : NULL;
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = data ? (size_t)n : 0;
    return data;
}

static int init(void **state) {
    documents *d = calloc(1, sizeof *d);
    if (!d) return 1;
    d->json = slurp(DOC_DIR "/doc.json", &d->json_size);
    d->html = slurp(DOC_DIR "/doc.html", &d->html_size);
    *state = d;
    return d->json && d->html ? 0 : 1;
}

static void cleanup(void *state) {
    documents *d = state;
    free(d->json);
    free(d->html);
    free(d);
}

static int document(const csp_request *req, csp_reply *reply) {
    const documents *d = req->state;
    csp_str which = csp_query_arg(req, "doc");
    const int html = which.size == 4 && memcmp(which.data, "html", 4) == 0;
    csp_reply_set_content_type(reply, html ? "text/html; charset=utf-8" : "application/json");
    if (html)
        csp_reply_append(reply, d->html, d->html_size);
    else
        csp_reply_append(reply, d->json, d->json_size);
    if (csp_query_arg(req, "cache").size) csp_reply_cache(reply, 60);
    return 200;
}

CSP_HANDLER_WITH_HOOKS(document, init, cleanup)
