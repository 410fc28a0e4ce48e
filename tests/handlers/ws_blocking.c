/* A blocking handler (its calls run on the worker's pool) that accepts WebSockets from its call,
 * for the tests of accepting off the event loop.
 *   ?wait=MS     the call sleeps MS first (a lookup that blocks): frames the client sends meanwhile
 *                wait for the 101
 *   ?burst=N     before returning, the call sends "from the call", then N binary messages of 1 KiB
 *                numbered in their first 4 bytes, then "burst N again A" (A: the sends that said
 *                CSP_AGAIN: a call's sends never wait for a conversation not carried yet)
 *   ?linger=MS   the call sleeps MS after accepting (a client may leave before it returns)
 *   ?deny        answered 403
 * In the conversation every message is echoed (its callbacks run on the loop). A plain GET
 * ?closes answers "accepted A closed C last CODE refused R waited W" for this worker (R: csp_ws_accept
 * said NULL, the client having gone during the wait; W: calls that began a ?wait). */
#include <csp/csp.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_accepted, g_closed, g_refused, g_waited;
static int g_last_code;

static void on_message(csp_ws *ws, const void *data, size_t size, int binary, void *user_data) {
    (void)user_data;
    csp_ws_send(ws, data, size, binary);
}

static void on_close(csp_ws *ws, int code, const char *reason, size_t reason_size, void *user_data) {
    (void)ws, (void)reason, (void)reason_size, (void)user_data;
    pthread_mutex_lock(&g_lock);
    ++g_closed;
    g_last_code = code;
    pthread_mutex_unlock(&g_lock);
}

static long arg(const csp_request *req, const char *name) {
    csp_str value = csp_query_arg(req, name);
    char text[16] = "";
    if (!value.data || value.size >= sizeof text) return 0;
    memcpy(text, value.data, value.size);
    return strtol(text, NULL, 10);
}

static int ws_blocking(const csp_request *req, csp_reply *reply) {
    static const csp_ws_callbacks callbacks = {.size = sizeof(csp_ws_callbacks), .on_message = on_message, .on_close = on_close};
    if (csp_query_arg(req, "closes").data) {
        pthread_mutex_lock(&g_lock);
        csp_reply_printf(reply, "accepted %ld closed %ld last %d refused %ld waited %ld", g_accepted, g_closed,
                         g_last_code, g_refused, g_waited);
        pthread_mutex_unlock(&g_lock);
        return 200;
    }
    if (csp_query_arg(req, "deny").data) {
        csp_reply_puts(reply, "denied\n");
        return 403;
    }
    const long wait_ms = arg(req, "wait");
    if (wait_ms > 0) {
        pthread_mutex_lock(&g_lock);
        ++g_waited;
        pthread_mutex_unlock(&g_lock);
        const struct timespec pause = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    csp_reply_add_header(reply, "Set-Cookie", "blocking=1; Path=/");
    csp_ws *ws = csp_ws_accept(req, reply, &callbacks, NULL);
    if (!ws) {
        pthread_mutex_lock(&g_lock);
        ++g_refused;
        pthread_mutex_unlock(&g_lock);
        return csp_ws_refuse(req, reply);
    }
    pthread_mutex_lock(&g_lock);
    ++g_accepted;
    pthread_mutex_unlock(&g_lock);
    const long linger_ms = arg(req, "linger");
    if (linger_ms > 0) {
        const struct timespec pause = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    const long burst = arg(req, "burst");
    if (burst > 0) {
        static char block[1024];
        long again = 0;
        csp_ws_send_text(ws, "from the call");
        for (long i = 0; i < burst; ++i) {
            char numbered[sizeof block];
            memcpy(numbered, block, sizeof numbered);
            memcpy(numbered, &i, 4);
            if (csp_ws_send(ws, numbered, sizeof numbered, CSP_WS_BINARY) == CSP_AGAIN) ++again;
        }
        char text[64];
        snprintf(text, sizeof text, "burst %ld again %ld", burst, again);
        csp_ws_send_text(ws, text);
    }
    return CSP_WS_ACCEPTED;
}

CSP_BLOCKING_HANDLER(ws_blocking)
