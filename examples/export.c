/* A CSV export of any size, streamed with flat memory (SDK 2.1, C):
 *   GET /csp/export?rows=N    N rows (default 1000)
 *   GET /csp/export?mb=N      rows until the body reaches N MiB (1024 for 1 GiB)
 * The rows are made as the client takes them: the handler writes until the stream says
 * CSP_AGAIN, and its on-writable callback goes on from there. Memory stays at the stream's
 * high-water mark whatever the size, and no thread waits: it all runs on the event loop. */
#include <csp/csp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct export_job {
    unsigned long long row, rows;  /* next row; rows to make (0: count bytes instead) */
    unsigned long long bytes, max_bytes;
    char block[64 * 1024];
};

static unsigned long long number(const csp_request *req, const char *name, unsigned long long fallback) {
    csp_str v = csp_query_arg(req, name);
    char text[24];
    if (!v.data || v.size == 0 || v.size >= sizeof text) return fallback;
    memcpy(text, v.data, v.size);
    text[v.size] = 0;
    char *end;
    unsigned long long n = strtoull(text, &end, 10);
    return *end ? fallback : n;
}

static int done(const struct export_job *job) {
    return job->rows ? job->row > job->rows : job->bytes >= job->max_bytes;
}

/* Fills the block with whole rows; its size. */
static size_t make_rows(struct export_job *job) {
    size_t used = 0;
    if (job->row == 0) {
        used = (size_t)snprintf(job->block, sizeof job->block, "id,name,email,amount\n");
        job->row = 1;
    }
    while (!done(job) && sizeof job->block - used > 128) {
        unsigned long long id = job->row;
        int n = snprintf(job->block + used, sizeof job->block - used, "%llu,user%llu,user%llu@example.org,%llu.%02llu\n",
                         id, id, id, id * 7919 % 100000, id % 100);
        used += (size_t)n;
        job->bytes += (size_t)n;
        ++job->row;
    }
    return used;
}

/* Writes until the connection is full (CSP_AGAIN) or the export is complete. */
static void pump(csp_stream *s, void *user_data) {
    struct export_job *job = user_data;
    while (!done(job) || job->row == 0) {
        int r = csp_stream_write(s, job->block, make_rows(job));
        if (r < 0) return;          /* the client left: csp_pending_on_done frees the job */
        if (r == CSP_AGAIN) return; /* called again when there is room */
    }
    csp_stream_end(s);
}

static void on_abort(csp_pending *p, int reason, void *user_data) {
    (void)user_data;
    /* A draining server warns first; an export that cannot finish in time is cut short. */
    if (reason != CSP_ABORT_DRAINING) csp_pending_finish(p, 500);
}

static void free_job(csp_pending *p, void *user_data) {
    (void)p;
    free(user_data);
}

static int export_csv(const csp_request *req, csp_reply *reply) {
    struct export_job *job = calloc(1, sizeof *job);
    if (!job) return 503;
    job->max_bytes = number(req, "mb", 0) << 20;
    job->rows = job->max_bytes ? 0 : number(req, "rows", 1000);
    csp_reply_set_content_type(reply, "text/csv; charset=utf-8");
    csp_reply_add_header(reply, "Content-Disposition", "attachment; filename=\"export.csv\"");
    csp_stream *s = csp_reply_stream(reply, 200);
    if (!s) {
        free(job);
        return 503;
    }
    csp_pending *p = csp_stream_pending(s);
    csp_pending_on_done(p, free_job, job);
    csp_pending_on_abort(p, on_abort, NULL);
    csp_stream_on_writable(s, pump, job);
    pump(s, job);
    return CSP_DEFERRED;
}

CSP_HANDLER(export_csv)
