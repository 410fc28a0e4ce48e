/* For bench/stream.py: N MiB of one repeated 64 KiB block, streamed two ways:
 *   /csp/blob/loop?mb=N     on the event loop, writing until CSP_AGAIN, resumed by on-writable
 *   /csp/blob/thread?mb=N   from a thread of its own, each write waiting for room
 * so that what is timed is the host's streaming, not the making of the bytes. */
#include <csp/csp.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char block[64 * 1024];

struct job {
    csp_stream *s;
    size_t left;
};

static void pump(csp_stream *s, void *user_data) {
    struct job *job = user_data;
    while (job->left > 0) {
        size_t n = job->left < sizeof block ? job->left : sizeof block;
        int r = csp_stream_write(s, block, n);
        if (r < 0) return;
        job->left -= n;
        if (r == CSP_AGAIN && job->left > 0) return;
    }
    csp_stream_end(s);
}

static void *write_all(void *user_data) {
    struct job *job = user_data;
    while (job->left > 0) {
        size_t n = job->left < sizeof block ? job->left : sizeof block;
        if (csp_stream_write(job->s, block, n) != 0) break;
        job->left -= n;
    }
    csp_stream_end(job->s);
    free(job);
    return NULL;
}

static void free_job(csp_pending *p, void *user_data) {
    (void)p;
    free(user_data);
}

static int blob(const csp_request *req, csp_reply *reply) {
    csp_str mb = csp_query_arg(req, "mb");
    size_t size = (size_t)(mb.data ? atoi(mb.data) : 1) << 20;
    struct job *job = malloc(sizeof *job);
    if (!job) return 503;
    csp_reply_set_content_type(reply, "application/octet-stream");
    csp_stream *s = csp_reply_stream(reply, 200);
    if (!s) {
        free(job);
        return 503;
    }
    job->s = s;
    job->left = size;
    if (req->path_info.size == 7 && memcmp(req->path_info.data, "/thread", 7) == 0) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, write_all, job) != 0) {
            write_all(job);
        } else {
            pthread_detach(thread);
        }
        return CSP_DEFERRED;
    }
    csp_pending_on_done(csp_stream_pending(s), free_job, job);
    csp_stream_on_writable(s, pump, job);
    pump(s, job);
    return CSP_DEFERRED;
}

static int init(void **state) {
    (void)state;
    memset(block, 'x', sizeof block);
    return 0;
}

CSP_HANDLER_WITH_HOOKS(blob, init, NULL)
