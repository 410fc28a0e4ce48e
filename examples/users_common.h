/* What users.c (blocking, libpq's synchronous API) and users_async.c (deferred replies,
 * libpq's asynchronous API) share: the routes, the SQL, and how a result or an error
 * becomes an HTTP answer. PostgreSQL reads the JSON bodies and writes the JSON answers
 * (json_populate_record, row_to_json); the only JSON written here is an error message. */
#ifndef USERS_COMMON_H
#define USERS_COMMON_H

#include <csp/csp.h>
#include <libpq-fe.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run first on every new connection: the table appears as soon as the database does. The
 * advisory lock serialises connections (and worker processes) that start at the same moment:
 * concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index. The three
 * statements are one implicit transaction, which the lock and SET LOCAL last for. */
#define USERS_SCHEMA_SQL                                                                    \
    "SET LOCAL client_min_messages = warning; SELECT pg_advisory_xact_lock(7311010); "     \
    "CREATE TABLE IF NOT EXISTS users(id bigserial primary key, name text not null, email text not null)"

enum users_op { USERS_GET, USERS_CREATE, USERS_DELETE };

/* Every statement takes one parameter, $1, and is only ever sent with PQ*QueryParams. */
static const char* const users_sql[] = {
    [USERS_GET] = "SELECT row_to_json(u)::text FROM users u WHERE u.id = $1::bigint",
    [USERS_CREATE] = ("INSERT INTO users(name, email) SELECT r.name, r.email"
                      " FROM json_populate_record(NULL::users, $1::json) r RETURNING id, row_to_json(users)::text"),
    [USERS_DELETE] = "DELETE FROM users WHERE id = $1::bigint",
};

/* One request, parsed: what to run, with what. Owns its strings (users_call_free). */
typedef struct users_call {
    enum users_op op;
    char* param; /* $1: the id, or the JSON body, NUL-terminated */
    char* base;  /* the resource's path, "/csp/users": where Location points */
} users_call;

static inline void users_call_free(users_call* call) {
    free(call->param);
    free(call->base);
    call->param = call->base = NULL;
}

static inline int users_is(csp_str s, const char* text) {
    return s.size == strlen(text) && memcmp(s.data, text, s.size) == 0;
}

static inline char* users_copy(const char* data, size_t size) {
    char* copy = malloc(size + 1);
    if (copy) {
        if (size) memcpy(copy, data, size);
        copy[size] = '\0';
    }
    return copy;
}

/* A JSON string, escaped (PostgreSQL's messages quote names: "email"). */
static inline void users_json_string(csp_reply* reply, const char* text) {
    csp_reply_puts(reply, "\"");
    for (const unsigned char* p = (const unsigned char*)text; *p; ++p) {
        if (*p == '"' || *p == '\\') csp_reply_printf(reply, "\\%c", *p);
        else if (*p < 0x20) csp_reply_printf(reply, "\\u%04x", *p);
        else csp_reply_append(reply, p, 1);
    }
    csp_reply_puts(reply, "\"");
}

static inline int users_error(csp_reply* reply, int status, const char* message) {
    csp_reply_set_content_type(reply, "application/json");
    csp_reply_puts(reply, "{\"error\":");
    users_json_string(reply, message ? message : "unknown");
    csp_reply_puts(reply, "}\n");
    return status;
}

static inline int users_unavailable(csp_reply* reply) {
    csp_reply_add_header(reply, "Retry-After", "1");
    return users_error(reply, 503, "the database is unavailable");
}

/* 0 with `call` filled, or the status of an answer already written (400, 405, 503). */
static inline int users_parse(const csp_request* req, csp_reply* reply, users_call* call) {
    const csp_str info = req->path_info;
    memset(call, 0, sizeof *call);
    if (info.size <= 1) { /* "" or "/": the collection */
        if (!users_is(req->method, "POST")) {
            csp_reply_add_header(reply, "Allow", "POST");
            return users_error(reply, 405, "POST a user here");
        }
        if (req->body.size && memchr(req->body.data, '\0', req->body.size))
            return users_error(reply, 400, "the body holds a NUL byte");
        call->op = USERS_CREATE;
        call->param = users_copy(req->body.data, req->body.size);
    } else {
        if (users_is(req->method, "GET")) call->op = USERS_GET;
        else if (users_is(req->method, "DELETE")) call->op = USERS_DELETE;
        else {
            csp_reply_add_header(reply, "Allow", "GET, DELETE");
            return users_error(reply, 405, "GET or DELETE a user here");
        }
        for (size_t i = 1; i < info.size; ++i) /* the range is PostgreSQL's to check (22003) */
            if (info.data[i] < '0' || info.data[i] > '9') return users_error(reply, 400, "the id is not a number");
        call->param = users_copy(info.data + 1, info.size - 1);
    }
    /* path is "/csp/NAME" + path_info, and NAME is [A-Za-z0-9_-]+: a safe header value. */
    call->base = users_copy(req->path.data, req->path.size - info.size);
    if (!call->param || !call->base) {
        users_call_free(call);
        return users_unavailable(reply);
    }
    return 0;
}

/* The client's data is wrong (SQLSTATE class 22, data exception: bad JSON, an id out of
 * range; 23, integrity constraint: a missing field): 400 with PostgreSQL's reason. The
 * database is down, stopping or full (08 connection exception, 57 operator intervention, 53
 * insufficient resources), or the connection broke (libpq's own errors carry no SQLSTATE):
 * 503. Anything else is this code's fault: 500, logged. */
static inline int users_failed(const PGresult* res, csp_reply* reply, const char* who) {
    const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char* message = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0))
        return users_error(reply, 400, message);
    if (!state || strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 || strncmp(state, "53", 2) == 0)
        return users_unavailable(reply);
    fprintf(stderr, "%s: SQLSTATE %s: %s\n", who, state, message ? message : "");
    return users_error(reply, 500, "database error");
}

/* The answer to `call` from its statement's result (NULL: libpq had none to give). */
static inline int users_answer(const users_call* call, const PGresult* res, csp_reply* reply, const char* who) {
    const ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return users_failed(res, reply, who);
    switch (call->op) {
    case USERS_GET:
        if (status != PGRES_TUPLES_OK) break;
        if (PQntuples(res) == 0) return users_error(reply, 404, "no such user");
        csp_reply_set_content_type(reply, "application/json");
        csp_reply_append(reply, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0));
        return 200;
    case USERS_CREATE: {
        if (status != PGRES_TUPLES_OK || PQntuples(res) != 1) break;
        char location[512];
        snprintf(location, sizeof location, "%s/%s", call->base, PQgetvalue(res, 0, 0));
        csp_reply_add_header(reply, "Location", location);
        csp_reply_set_content_type(reply, "application/json");
        csp_reply_append(reply, PQgetvalue(res, 0, 1), (size_t)PQgetlength(res, 0, 1));
        return 201;
    }
    case USERS_DELETE:
        if (status != PGRES_COMMAND_OK) break;
        return strcmp(PQcmdTuples((PGresult*)res), "0") == 0 ? users_error(reply, 404, "no such user") : 204;
    }
    fprintf(stderr, "%s: unexpected result %s\n", who, PQresStatus(status));
    return users_error(reply, 500, "unexpected database result");
}

/* Connection settings: libpq's environment (PGHOST, PGPORT, PGDATABASE, PGUSER...), plus an
 * application name and, unless PGCONNECT_TIMEOUT says otherwise, a 5 s connect timeout. */
static inline void users_conn_params(const char* keys[3], const char* values[3], const char* who) {
    keys[0] = "fallback_application_name";
    values[0] = who;
    keys[1] = getenv("PGCONNECT_TIMEOUT") ? NULL : "connect_timeout";
    values[1] = "5";
    keys[2] = values[2] = NULL;
}

/* PostgreSQL's notices and warnings go to the cspd log, saying whose they are. */
static inline void users_notice(void* who, const char* message) {
    fprintf(stderr, "%s: postgres: %s", (const char*)who, message);
}

/* An idle connection should hear nothing: anything readable (the server's "terminating
 * connection" and its close, after a restart or an idle timeout) means it is going. PQstatus
 * does not know yet, and PQconsumeInput stops at the message before the close. */
static inline int users_idle_connection_gone(PGconn* conn) {
    struct pollfd socket = {PQsocket(conn), POLLIN, 0};
    return PQstatus(conn) != CONNECTION_OK || poll(&socket, 1, 0) != 0;
}

/* "%.*s": libpq's messages end with a newline, ours do not. */
static inline int users_trimmed(const char* message) {
    size_t n = strlen(message);
    while (n && (message[n - 1] == '\n' || message[n - 1] == ' ')) --n;
    return (int)n;
}

#endif /* USERS_COMMON_H */
