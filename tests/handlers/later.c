/* Deferred replies (csp_reply_defer), finished every way SDK 2 offers:
 *   /csp/later/thread  from a thread the handler starts
 *   /csp/later/timer   from a csp_loop_timer on the event loop (?ms=, default 20)
 *   /csp/later/fd      from a csp_loop_watch_fd on a pipe another thread writes to
 *   /csp/later/now     during the call itself
 *   /csp/later/never   not until the host says the client is gone (on-abort)
 *   /csp/later/aborts  (answered at once) what on-abort has been told so far
 * Threads it starts are joined in cleanup: code must not be unloaded under them. */
#include <csp/csp.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LATER_VERSION
#define LATER_VERSION 1
#endif

static atomic_int aborts[4];     /* by reason: CSP_ABORT_CLIENT_GONE, _TIMEOUT, _DRAINING */
static atomic_int dropped;       /* csp_pending_finish calls that returned -1 */
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t threads[4096];
static int thread_count;

static int is(csp_str s, const char *text) { return s.size == strlen(text) && memcmp(s.data, text, s.size) == 0; }

static void finish(csp_pending *p, const char *how) {
    csp_reply_printf(csp_pending_reply(p), "v%d %s\n", LATER_VERSION, how);
    if (csp_pending_finish(p, 200) != 0) atomic_fetch_add(&dropped, 1);
}

static void *finish_from_thread(void *arg) {
    usleep(10000);
    finish((csp_pending *)arg, "from a thread");
    return NULL;
}

static void on_timer(csp_pending *p, void *user_data) {
    (void)user_data;
    finish(p, "from a timer");
}

struct pipe_job {
    int fds[2];
};

static void *write_soon(void *arg) {
    struct pipe_job *job = arg;
    usleep(10000);
    ssize_t n = write(job->fds[1], "x", 1);
    (void)n;
    return NULL;
}

static void on_readable(csp_pending *p, int fd, unsigned events, void *user_data) {
    struct pipe_job *job = user_data;
    char c;
    ssize_t n = read(fd, &c, 1);
    finish(p, n == 1 && (events & CSP_READABLE) ? "from an fd watch" : "from a broken fd watch");
    close(job->fds[0]);
    close(job->fds[1]);
    free(job);
}

/* Told of an abort. Only /never finishes here: the others are finished by what they wait for
 * (a thread, a timer, an fd), which goes on after the client left -- one finish per reply. */
static void on_abort(csp_pending *p, int reason, void *finish_here) {
    if (reason >= 1 && reason <= 3) atomic_fetch_add(&aborts[reason], 1);
    if (finish_here && reason != CSP_ABORT_DRAINING) finish(p, "after an abort"); /* the host drops it */
}

static void start_thread(void *(*fn)(void *), void *arg) {
    pthread_mutex_lock(&threads_lock);
    if (thread_count == (int)(sizeof threads / sizeof threads[0]) ||
        pthread_create(&threads[thread_count], NULL, fn, arg) != 0)
        fn(arg); /* no thread to be had: do it here */
    else
        ++thread_count;
    pthread_mutex_unlock(&threads_lock);
}

static int later(const csp_request *req, csp_reply *reply) {
    csp_reply_set_content_type(reply, "text/plain");
    if (is(req->path_info, "/aborts")) {
        csp_reply_printf(reply, "gone=%d timeout=%d draining=%d dropped=%d\n", atomic_load(&aborts[1]),
                         atomic_load(&aborts[2]), atomic_load(&aborts[3]), atomic_load(&dropped));
        return 200;
    }
    csp_pending *p = csp_reply_defer(reply);
    if (!p) {
        csp_reply_puts(reply, "cannot defer\n");
        return 500;
    }
    csp_pending_on_abort(p, on_abort, is(req->path_info, "/never") ? (void *)1 : NULL);
    if (is(req->path_info, "/thread")) {
        start_thread(finish_from_thread, p);
    } else if (is(req->path_info, "/timer")) {
        csp_str ms = csp_query_arg(req, "ms");
        char text[16] = "20";
        if (ms.data) snprintf(text, sizeof text, "%.*s", (int)ms.size, ms.data);
        if (csp_loop_timer(p, (unsigned)atoi(text), on_timer, NULL) != 0) finish(p, "without a timer");
    } else if (is(req->path_info, "/fd")) {
        struct pipe_job *job = malloc(sizeof *job);
        if (!job || pipe(job->fds) != 0 || csp_loop_watch_fd(p, job->fds[0], CSP_READABLE, on_readable, job) != 0) {
            finish(p, "without an fd watch");
        } else {
            start_thread(write_soon, job);
        }
    } else if (is(req->path_info, "/now")) {
        finish(p, "during the call");
    } else if (!is(req->path_info, "/never")) {
        finish(p, "for an unknown path");
    }
    return CSP_DEFERRED;
}

static int init(void **state) {
    (void)state;
    return 0;
}

static void cleanup(void *state) {
    (void)state;
    for (int i = 0; i < thread_count; ++i) pthread_join(threads[i], NULL);
}

CSP_HANDLER_WITH_HOOKS(later, init, cleanup)
