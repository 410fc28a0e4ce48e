/* users.c's resource (the same routes and answers, users_common.h) with libpq's asynchronous
 * API, on the event loop: an ordinary handler that defers its replies, with no thread of its
 * own and no call that blocks.
 *
 * Connections: one per event loop thread (a thread_local link, also listed in the state so
 * that cleanup can close them all), opened with PQconnectStartParams/PQconnectPoll. A connect
 * still going after 5 s is given up (PQconnectPoll keeps no time). Each new connection runs
 * USERS_SCHEMA_SQL first, so the table appears once the database does.
 * Queueing: the requests of one loop share its connection in pipeline mode (libpq 14+): each
 * is sent at once, PQsendQueryParams then PQpipelineSync, so many are in flight and their
 * results come back in the order sent. That order is the link's FIFO; a Sync after each
 * statement keeps one request's error from aborting the next. A request whose client left is
 * still read to the end of its results (they are dropped), so the order holds.
 * Watching: an fd watch belongs to a pending reply (finishing it cancels the watch), so the
 * link watches through its oldest request and moves on when that one is answered. An idle
 * connection is watched by nobody: the next request checks it (a poll: an idle connection
 * hears nothing unless the server is closing it) and connects again. A connection that breaks answers 503 to every request on it; the next
 * request connects again.
 * Memory: a request's job is freed in csp_pending_on_done, never where it is finished. */
#include "users_common.h"

#include <pthread.h>

#define CONNECT_TIMEOUT_MS 5000

typedef struct link link;

typedef struct job {
    link* link;
    struct job* next;
    csp_pending* pending;
    users_call call;
    PGresult* result; /* the statement's result, kept until its Sync arrives */
    int sent;         /* in the pipeline */
    int drain_warned; /* the first CSP_ABORT_DRAINING is a warning, a second the loss */
} job;

enum phase { DOWN, CONNECTING, SETUP, READY };

struct link {
    PGconn* conn;
    enum phase phase;
    PostgresPollingStatusType polling; /* CONNECTING: what PQconnectPoll waits for */
    int setup_failed, flushing, down_logged;
    unsigned attempt, timer_attempt;   /* which connect the connect timer is for */
    job *head, *tail;                  /* FIFO: the sent jobs first */
    job *reading, *writing, *timing;   /* whose pending holds the read / write watch, the timer */
    link* next_link;
};

typedef struct state {
    pthread_mutex_t lock;
    link* links;
} state;

static _Thread_local link* this_loop;

static void pump(link* l, unsigned ready);

/* Sends j's answer: j leaves the queue and whatever it held for the link. */
static void finish(link* l, job* j, int status) {
    job* before = NULL;
    for (job* at = l->head; at && at != j; at = at->next) before = at;
    if (before) before->next = j->next;
    else if (l->head == j) l->head = j->next;
    if (l->tail == j) l->tail = before;
    if (l->reading == j) l->reading = NULL;
    if (l->writing == j) l->writing = NULL;
    if (l->timing == j) l->timing = NULL;
    csp_pending_finish(j->pending, status);
}

/* The connection is lost or cannot be had (`why`, logged once until it works again), or the
 * loop is ending (NULL): every request on it gets 503. */
static void fail_all(link* l, const char* why) {
    if (why && !l->down_logged) {
        fprintf(stderr, "users_async: the database is unavailable, answering 503: %.*s\n", users_trimmed(why), why);
        l->down_logged = 1;
    }
    job* jobs = l->head;
    l->head = l->tail = l->reading = l->writing = l->timing = NULL;
    PQfinish(l->conn);
    l->conn = NULL;
    l->phase = DOWN;
    while (jobs) {
        job* j = jobs;
        jobs = j->next;
        csp_pending_finish(j->pending, users_unavailable(csp_pending_reply(j->pending)));
    }
}

static void on_ready(csp_pending* p, int fd, unsigned events, void* user_data) {
    job* j = user_data;
    link* l = j->link;
    (void)p, (void)fd;
    if (l->reading == j && (events & CSP_READABLE)) l->reading = NULL;
    if (l->writing == j && (events & CSP_WRITABLE)) l->writing = NULL;
    pump(l, events);
}

static void on_connect_timer(csp_pending* p, void* user_data) {
    job* j = user_data;
    link* l = j->link;
    (void)p;
    l->timing = NULL;
    if (l->phase == CONNECTING && l->timer_attempt == l->attempt) fail_all(l, "connecting timed out");
    else pump(l, 0);
}

/* Waits for what the link needs next, through its oldest request. */
static void arm(link* l) {
    job* holder = l->head;
    if (!holder || !l->conn) return;
    int want_read = l->phase == SETUP || holder->sent, want_write = l->flushing;
    if (l->phase == CONNECTING) {
        want_read = l->polling == PGRES_POLLING_READING;
        want_write = l->polling == PGRES_POLLING_WRITING;
        if (!l->timing && csp_loop_timer(holder->pending, CONNECT_TIMEOUT_MS, on_connect_timer, holder) == 0) {
            l->timing = holder;
            l->timer_attempt = l->attempt;
        }
    }
    const int fd = PQsocket(l->conn);
    if (want_read && !l->reading) {
        if (csp_loop_watch_fd(holder->pending, fd, CSP_READABLE, on_ready, holder) != 0) goto cannot;
        l->reading = holder;
    }
    if (want_write && !l->writing) {
        if (csp_loop_watch_fd(holder->pending, fd, CSP_WRITABLE, on_ready, holder) != 0) goto cannot;
        l->writing = holder;
    }
    return;
cannot:
    fail_all(l, "cannot watch the connection's socket");
}

static int start_connect(link* l) {
    const char *keys[3], *values[3];
    users_conn_params(keys, values, "users_async");
    l->conn = PQconnectStartParams(keys, values, 0);
    if (!l->conn || PQstatus(l->conn) == CONNECTION_BAD) {
        fail_all(l, l->conn ? PQerrorMessage(l->conn) : "out of memory");
        return 0;
    }
    PQsetNoticeProcessor(l->conn, users_notice, (void*)"users_async");
    l->phase = CONNECTING;
    l->polling = PGRES_POLLING_WRITING; /* as libpq's manual says to start */
    l->attempt++;
    return 1;
}

/* SETUP: reads USERS_SCHEMA_SQL's results; 0 if the link failed. */
static int read_setup(link* l) {
    while (!PQisBusy(l->conn)) {
        PGresult* r = PQgetResult(l->conn);
        if (!r) {
            if (l->setup_failed || PQenterPipelineMode(l->conn) != 1) {
                fail_all(l, l->setup_failed ? "the table could not be set up" : PQerrorMessage(l->conn));
                return 0;
            }
            if (l->down_logged) fprintf(stderr, "users_async: the database is reachable again\n");
            l->down_logged = 0;
            l->phase = READY;
            return 1;
        }
        const ExecStatusType status = PQresultStatus(r);
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            const char* why = PQresultErrorMessage(r);
            fprintf(stderr, "users_async: setting up the table: %.*s\n", users_trimmed(why), why);
            l->setup_failed = 1;
        }
        PQclear(r);
    }
    return 1;
}

/* READY: answers the requests whose results are in, oldest first; 0 if the link failed. */
static int read_results(link* l) {
    int nulls = 0; /* a statement's results end with one NULL, then its Sync: two means confusion */
    while (l->head && l->head->sent && PQstatus(l->conn) == CONNECTION_OK && !PQisBusy(l->conn)) {
        job* j = l->head;
        PGresult* r = PQgetResult(l->conn);
        if (!r) {
            if (++nulls < 2) continue;
            fail_all(l, "lost track of the pipeline");
            return 0;
        }
        nulls = 0;
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            finish(l, j, users_answer(&j->call, j->result, csp_pending_reply(j->pending), "users_async"));
        } else if (!j->result) {
            j->result = r; /* freed with the job */
        } else {
            PQclear(r);
        }
    }
    if (PQstatus(l->conn) == CONNECTION_OK) return 1;
    fail_all(l, PQerrorMessage(l->conn));
    return 0;
}

/* READY: puts every request not yet sent into the pipeline; 0 if the link failed. */
static int send_new(link* l) {
    for (job* j = l->head; j; j = j->next) {
        if (j->sent) continue;
        const char* param = j->call.param;
        if (!PQsendQueryParams(l->conn, users_sql[j->call.op], 1, NULL, &param, NULL, NULL, 0) ||
            !PQpipelineSync(l->conn)) {
            fail_all(l, PQerrorMessage(l->conn));
            return 0;
        }
        j->sent = 1;
    }
    return 1;
}

/* Moves the link on as far as it can go without waiting; 0 if it failed. `ready`: what the
 * socket is ready for (CSP_READABLE, CSP_WRITABLE), 0 when called for a new request. */
static int advance(link* l, unsigned ready) {
    if (l->phase == READY && !l->head->sent && !l->reading && !l->writing && users_idle_connection_gone(l->conn)) {
        PQfinish(l->conn); /* closed while idle (a restart): connect again, nobody fails */
        l->conn = NULL;
        l->phase = DOWN;
    }
    if (l->phase == DOWN && !start_connect(l)) return 0;
    if (l->phase == CONNECTING) {
        if (!ready) return 1; /* PQconnectPoll only once the socket is ready */
        l->polling = PQconnectPoll(l->conn);
        if (l->polling == PGRES_POLLING_FAILED) goto failed;
        if (l->polling != PGRES_POLLING_OK) return 1;
        if (PQsetnonblocking(l->conn, 1) != 0 || !PQsendQuery(l->conn, USERS_SCHEMA_SQL)) goto failed;
        l->phase = SETUP;
        l->setup_failed = 0;
        ready = 0;
    }
    if ((ready & CSP_READABLE) && !PQconsumeInput(l->conn)) goto failed;
    if (l->phase == SETUP && !read_setup(l)) return 0;
    if (l->phase == READY && (!read_results(l) || !send_new(l))) return 0;
    const int flushed = PQflush(l->conn); /* 1: more to send once the socket takes it */
    if (flushed < 0) goto failed;
    l->flushing = flushed;
    return 1;
failed:
    fail_all(l, PQerrorMessage(l->conn));
    return 0;
}

static void pump(link* l, unsigned ready) {
    /* Without a request there is nobody to watch through: the next one carries on. */
    if (l->head && advance(l, ready)) arm(l);
}

static void on_abort(csp_pending* p, int reason, void* user_data) {
    job* j = user_data;
    link* l = j->link;
    (void)p;
    if (reason == CSP_ABORT_DRAINING && !j->drain_warned) {
        j->drain_warned = 1; /* the warning: the answer will most likely come in time */
        return;
    }
    if (reason == CSP_ABORT_DRAINING) { /* the loop is ending and its watches with it */
        fail_all(l, NULL);
        return;
    }
    /* The client left (or was answered 504). A sent statement's results must still be read
     * to keep the pipeline's order: it is finished then. One not sent yet goes now. */
    if (!j->sent) {
        finish(l, j, 503);
        arm(l); /* it may have held the watch */
    }
}

static void free_job(job* j) {
    PQclear(j->result);
    users_call_free(&j->call);
    free(j);
}

static void on_done(csp_pending* p, void* user_data) {
    (void)p;
    free_job(user_data);
}

static link* this_loops_link(state* s) {
    if (this_loop) return this_loop;
    link* l = calloc(1, sizeof *l);
    if (!l) return NULL;
    pthread_mutex_lock(&s->lock);
    l->next_link = s->links;
    s->links = l;
    pthread_mutex_unlock(&s->lock);
    return this_loop = l;
}

static int users_async(const csp_request* req, csp_reply* reply) {
    users_call call;
    int status = users_parse(req, reply, &call);
    if (status) return status;
    link* l = this_loops_link(req->state);
    job* j = l ? calloc(1, sizeof *j) : NULL;
    csp_pending* p = j ? csp_reply_defer(reply) : NULL;
    if (!p) {
        free(j);
        users_call_free(&call);
        return users_unavailable(reply);
    }
    j->link = l;
    j->pending = p;
    j->call = call;
    const int done_set = csp_pending_on_done(p, on_done, j) == 0;
    if (!done_set || csp_pending_on_abort(p, on_abort, j) != 0) { /* only if the host is broken */
        csp_pending_finish(p, users_error(csp_pending_reply(p), 500, "cannot defer"));
        if (!done_set) free_job(j);
        return CSP_DEFERRED;
    }
    if (l->tail) l->tail->next = j;
    else l->head = j;
    l->tail = j;
    pump(l, 0);
    return CSP_DEFERRED;
}

static int init(void** out) {
    state* s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return 1;
    }
    *out = s;
    return 0;
}

/* Every reply is finished by now, so no job is left; the connections are closed here. */
static void cleanup(void* out) {
    state* s = out;
    while (s->links) {
        link* l = s->links;
        s->links = l->next_link;
        PQfinish(l->conn);
        free(l);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

CSP_HANDLER_WITH_HOOKS(users_async, init, cleanup)
