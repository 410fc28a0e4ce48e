/* Streamed replies (csp_reply_stream), every way SDK 2.1 offers. Built twice: `stream` runs on
 * the event loop, `stream_blocking` (STREAM_BLOCKING) on the blocking pool.
 * On the loop:
 *   /chunks?n=N   N writes during the call, then the end
 *   /prefix       bytes appended to the reply before it streams come first
 *   /timer?n=N    one write per 10 ms loop timer, then the end
 *   /thread?n=N   N writes from a thread the handler starts (it waits for room), then the end
 *   /sse          three server-sent events
 *   /big?mb=N     N MiB, driven by CSP_AGAIN and on-writable
 *   /flood        writes regardless of CSP_AGAIN until the host refuses
 *   /forever      one write, then nothing until on-abort
 *   /sse_once     one server-sent event ("tick", "first"), then nothing until on-abort
 *   /cut          one write, then cut short (finished with 500)
 *   /deferred     deferred first, streamed later from a timer
 *   /created      status 201 and a header of its own
 *   /refused      asks to stream a 204: refused, so it answers as usual
 *   /stats        (answered at once) what the streams have seen
 * On the pool:
 *   /big?mb=N     N MiB written as fast as room allows; the call returns without ending
 *   /fail         one write, then the call returns 500: cut short
 *   /end          ended inside the call */
#include <csp/csp.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reasons 1..4: CSP_ABORT_NO_BODY (4) is 2.3's; this file is built against 2.1 and 2.2 too. */
static atomic_int refused_writes, failed_ends, aborts[5];

static int is(csp_str s, const char *text) { return s.size == strlen(text) && memcmp(s.data, text, s.size) == 0; }

static int arg(const csp_request *req, const char *name, int fallback) {
    csp_str v = csp_query_arg(req, name);
    char text[16];
    if (!v.data || v.size >= sizeof text) return fallback;
    memcpy(text, v.data, v.size);
    text[v.size] = 0;
    return atoi(text);
}

/* The byte at `offset` of a /big body: the reader checks every one. */
static char pattern(size_t offset) { return (char)('a' + offset % 26); }

static void fill(char *block, size_t size, size_t offset) {
    for (size_t i = 0; i < size; ++i) block[i] = pattern(offset + i);
}

static void end(csp_stream *s) {
    if (csp_stream_end(s) != 0) atomic_fetch_add(&failed_ends, 1);
}

static void on_abort(csp_pending *p, int reason, void *user_data) {
    (void)p;
    if (reason >= 1 && reason <= 4) atomic_fetch_add(&aborts[reason], 1);
    if (user_data && reason != CSP_ABORT_DRAINING) end(user_data); /* /forever ends here */
}

#ifndef STREAM_BLOCKING

static atomic_int again, writable;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t threads[1024];
static int thread_count;

struct counted {
    csp_stream *s;
    int left;
};

static void on_tick(csp_pending *p, void *user_data) {
    struct counted *c = user_data;
    char line[32];
    int n = snprintf(line, sizeof line, "tick %d\n", c->left);
    csp_stream_write(c->s, line, (size_t)n);
    if (--c->left > 0 && csp_loop_timer(p, 10, on_tick, c) == 0) return;
    end(c->s);
    free(c);
}

static void *write_from_thread(void *user_data) {
    struct counted *c = user_data;
    for (int i = 0; i < c->left; ++i) {
        char line[32];
        int n = snprintf(line, sizeof line, "from a thread %d\n", i);
        csp_stream_write(c->s, line, (size_t)n);
    }
    end(c->s);
    free(c);
    return NULL;
}

struct big {
    csp_stream *s;
    size_t offset, total;
    char block[64 * 1024];
};

/* Writes until the stream says CSP_AGAIN, or the body is complete. */
static void pump(csp_stream *s, void *user_data) {
    struct big *b = user_data;
    if (b->offset > 0) atomic_fetch_add(&writable, 1);
    while (b->offset < b->total) {
        size_t n = b->total - b->offset < sizeof b->block ? b->total - b->offset : sizeof b->block;
        fill(b->block, n, b->offset);
        int r = csp_stream_write(s, b->block, n);
        if (r < 0) return; /* the client left: on-done frees */
        b->offset += n;
        if (r == CSP_AGAIN) {
            atomic_fetch_add(&again, 1);
            if (b->offset < b->total) return; /* on-writable calls again */
        }
    }
    end(s);
}

static void free_big(csp_pending *p, void *user_data) {
    (void)p;
    free(user_data);
}

static void start_thread(void *(*fn)(void *), void *arg) {
    pthread_mutex_lock(&threads_lock);
    if (thread_count == (int)(sizeof threads / sizeof threads[0]) ||
        pthread_create(&threads[thread_count], NULL, fn, arg) != 0)
        fn(arg);
    else
        ++thread_count;
    pthread_mutex_unlock(&threads_lock);
}

static void stream_later(csp_pending *p, void *user_data) {
    (void)user_data;
    csp_stream *s = csp_reply_stream(csp_pending_reply(p), 200);
    if (!s) {
        csp_pending_finish(p, 500);
        return;
    }
    csp_stream_puts(s, "streamed after a deferral\n");
    end(s);
}

static int handle(const csp_request *req, csp_reply *reply) {
    csp_reply_set_content_type(reply, "text/plain");
    csp_str path = req->path_info;
    if (is(path, "/stats")) {
        csp_reply_printf(reply,
                         "again=%d writable=%d refused=%d failed_ends=%d gone=%d timeout=%d draining=%d no_body=%d\n",
                         atomic_load(&again), atomic_load(&writable), atomic_load(&refused_writes),
                         atomic_load(&failed_ends), atomic_load(&aborts[1]), atomic_load(&aborts[2]),
                         atomic_load(&aborts[3]), atomic_load(&aborts[4]));
        return 200;
    }
    if (is(path, "/refused")) {
        csp_reply_puts(reply, csp_reply_stream(reply, 204) ? "streamed a 204\n" : "refused\n");
        return 200;
    }
    if (is(path, "/deferred")) {
        csp_pending *p = csp_reply_defer(reply);
        if (!p || csp_loop_timer(p, 10, stream_later, NULL) != 0) return 500;
        return CSP_DEFERRED;
    }
    if (is(path, "/prefix")) csp_reply_puts(reply, "prefix\n");
    if (is(path, "/sse") || is(path, "/sse_once")) csp_reply_set_content_type(reply, "text/event-stream");
    if (is(path, "/created")) csp_reply_add_header(reply, "X-Stream", "yes");
    csp_stream *s = csp_reply_stream(reply, is(path, "/created") ? 201 : 200);
    if (!s) return 500;
    csp_pending *p = csp_stream_pending(s);
    csp_pending_on_abort(p, on_abort, is(path, "/forever") || is(path, "/sse_once") ? s : NULL);
    if (is(path, "/chunks") || is(path, "/created")) {
        int n = arg(req, "n", 3);
        for (int i = 0; i < n; ++i) {
            char line[32];
            int size = snprintf(line, sizeof line, "chunk %d\n", i);
            csp_stream_write(s, line, (size_t)size);
        }
        end(s);
    } else if (is(path, "/prefix")) {
        csp_stream_puts(s, "body\n");
        end(s);
    } else if (is(path, "/timer") || is(path, "/thread")) {
        struct counted *c = malloc(sizeof *c);
        if (!c) {
            end(s);
            return CSP_DEFERRED;
        }
        c->s = s;
        c->left = arg(req, "n", 3);
        if (is(path, "/thread"))
            start_thread(write_from_thread, c);
        else if (csp_loop_timer(p, 10, on_tick, c) != 0) {
            end(s);
            free(c);
        }
    } else if (is(path, "/sse")) {
        csp_stream_event(s, "greeting", "hello");
        csp_stream_event(s, NULL, "line one\nline two");
        csp_stream_event(s, "bye", "");
        end(s);
    } else if (is(path, "/big")) {
        struct big *b = malloc(sizeof *b);
        if (!b) {
            end(s);
            return CSP_DEFERRED;
        }
        b->s = s;
        b->offset = 0;
        b->total = (size_t)arg(req, "mb", 1) << 20;
        csp_pending_on_done(p, free_big, b);
        csp_stream_on_writable(s, pump, b);
        pump(s, b);
    } else if (is(path, "/flood")) {
        static char block[64 * 1024];
        int r;
        while ((r = csp_stream_write(s, block, sizeof block)) >= 0)
            if (r == CSP_AGAIN) atomic_fetch_add(&again, 1);
        atomic_fetch_add(&refused_writes, 1);
        end(s); /* -1: the host cut it */
    } else if (is(path, "/forever")) {
        csp_stream_puts(s, "tick\n");
    } else if (is(path, "/sse_once")) {
        csp_stream_event(s, "tick", "first");
    } else if (is(path, "/cut")) {
        csp_stream_puts(s, "partial\n");
        csp_pending_finish(p, 500);
    } else {
        end(s);
    }
    return CSP_DEFERRED;
}

static void cleanup(void *state) {
    (void)state;
    for (int i = 0; i < thread_count; ++i) pthread_join(threads[i], NULL);
}

CSP_HANDLER_WITH_HOOKS(handle, NULL, cleanup)

#else /* STREAM_BLOCKING */

static int handle(const csp_request *req, csp_reply *reply) {
    csp_reply_set_content_type(reply, "text/plain");
    csp_stream *s = csp_reply_stream(reply, 200);
    if (!s) return 500;
    csp_pending_on_abort(csp_stream_pending(s), on_abort, NULL);
    if (is(req->path_info, "/big")) {
        static _Thread_local char block[64 * 1024];
        const size_t total = (size_t)arg(req, "mb", 1) << 20;
        for (size_t offset = 0; offset < total; offset += sizeof block) {
            fill(block, sizeof block, offset);
            if (csp_stream_write(s, block, sizeof block) != 0) {
                atomic_fetch_add(&refused_writes, 1);
                break; /* the client left */
            }
        }
        return CSP_DEFERRED; /* ends with the call */
    }
    csp_stream_puts(s, "partial\n");
    if (is(req->path_info, "/fail")) return 500;
    end(s);
    return CSP_DEFERRED;
}

CSP_BLOCKING_HANDLER(handle)

#endif
