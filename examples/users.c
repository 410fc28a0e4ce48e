/* A JSON resource over PostgreSQL, with libpq's synchronous API in a blocking handler:
 *   GET    /csp/users/ID  200 {"id":ID,"name":"...","email":"..."}, or 404
 *   POST   /csp/users     {"name":"...","email":"..."} -> 201 with it and Location: /csp/users/ID
 *   DELETE /csp/users/ID  204, or 404
 * Bad JSON, a missing field or a bad id: 400; the database down: 503 (users_common.h).
 * Settings come from libpq's environment: PGHOST, PGPORT, PGDATABASE, PGUSER...
 *
 * Threads: CSP_BLOCKING_HANDLER, so calls run on the worker's pool (--blocking-threads, 64)
 * and may wait in PQexecParams; the event loops never do.
 * Connections: a mutex-guarded stack of idle PGconn in the state. A call takes one (or
 * connects), uses it alone and gives it back, so there are never more than the calls that
 * ran at once. Not thread_local: C has no thread-exit destructor, and cleanup must be able
 * to close them all. One found broken (the server restarted) is replaced before use; one that
 * breaks during a call is closed, and the call answered 503.
 * init creates the table when the database is up. When it is not, init still succeeds, logs
 * why, and calls answer 503 until it is back: every new connection makes sure of the table. */
#include "users_common.h"

#include <pthread.h>
#include <stdatomic.h>

#define POOL_MAX 256 /* idle connections kept; more than --blocking-threads allows */

typedef struct pool {
    pthread_mutex_t lock;
    int count;
    PGconn* idle[POOL_MAX];
    atomic_int down; /* the last connect failed: said once in the log, until one works */
} pool;

static PGconn* connect_now(pool* p) {
    const char *keys[3], *values[3];
    users_conn_params(keys, values, "users");
    PGconn* conn = PQconnectdbParams(keys, values, 0);
    const char* why = conn ? PQerrorMessage(conn) : "out of memory";
    PGresult* schema = NULL;
    if (conn && PQstatus(conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(conn, users_notice, (void*)"users");
        schema = PQexec(conn, USERS_SCHEMA_SQL);
        if (PQresultStatus(schema) == PGRES_COMMAND_OK) {
            PQclear(schema);
            if (atomic_exchange(&p->down, 0)) fprintf(stderr, "users: the database is reachable again\n");
            return conn;
        }
        why = schema ? PQresultErrorMessage(schema) : PQerrorMessage(conn);
    }
    if (!atomic_exchange(&p->down, 1))
        fprintf(stderr, "users: the database is unavailable, answering 503 until it is back: %.*s\n",
                users_trimmed(why), why);
    PQclear(schema);
    PQfinish(conn);
    return NULL;
}

static PGconn* take(pool* p) {
    pthread_mutex_lock(&p->lock);
    PGconn* conn = p->count ? p->idle[--p->count] : NULL;
    pthread_mutex_unlock(&p->lock);
    if (conn && users_idle_connection_gone(conn)) { /* the server restarted: connect again */
        PQfinish(conn);
        conn = NULL;
    }
    return conn ? conn : connect_now(p);
}

static void give_back(pool* p, PGconn* conn) {
    if (PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE) {
        pthread_mutex_lock(&p->lock);
        if (p->count < POOL_MAX) {
            p->idle[p->count++] = conn;
            conn = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    PQfinish(conn); /* NULL-safe */
}

static int users(const csp_request* req, csp_reply* reply) {
    users_call call;
    int status = users_parse(req, reply, &call);
    if (status) return status;
    pool* p = req->state;
    PGconn* conn = take(p);
    if (!conn) {
        status = users_unavailable(reply);
    } else {
        const char* param = call.param;
        PGresult* res = PQexecParams(conn, users_sql[call.op], 1, NULL, &param, NULL, NULL, 0);
        status = users_answer(&call, res, reply, "users");
        PQclear(res);
        give_back(p, conn);
    }
    users_call_free(&call);
    return status;
}

static int init(void** state) {
    pool* p = calloc(1, sizeof *p);
    if (!p || pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return 1;
    }
    PGconn* conn = connect_now(p); /* creates the table, or logs why it cannot yet */
    if (conn) give_back(p, conn);
    *state = p;
    return 0;
}

static void cleanup(void* state) {
    pool* p = state;
    while (p->count) PQfinish(p->idle[--p->count]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

CSP_BLOCKING_HANDLER_WITH_HOOKS(users, init, cleanup)
