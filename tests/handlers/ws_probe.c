/* A WebSocket handler for the conformance and life-cycle tests. Text messages are commands, other
 * messages are echoed:
 *   "close CODE REASON"   csp_ws_close(CODE, REASON)
 *   "sub TOPIC" / "unsub TOPIC"   subscribe / unsubscribe, answered "subscribed TOPIC" / "unsubscribed TOPIC"
 *   "pub TOPIC TEXT"      csp_publish(TOPIC, TEXT) from the loop, answered "published N" (its return)
 *   "pubbig TOPIC N"      publishes N binary bytes 'B' to TOPIC
 *   "flood N"             sends N binary messages of 64 KiB from the loop, answered "flooded AGAIN-COUNT -1-COUNT"
 *   "thread N"            a thread of its own sends N text messages "t0".."tN-1", waiting for room
 *   "version"             answered with PROBE_VERSION
 *   "pid"                 answered with the worker's pid
 *   "crash"               a null store (the crash tests)
 *   "hang"                never returns (the watchdog's test)
 * The request is refused 403 without ?let=in, to show a handler decides before accepting; with
 * ?protocol=NAME it chooses that subprotocol. GET ?last=close answers the last close on_close heard
 * in this worker, as "CODE REASON". */
#include <csp/csp.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PROBE_VERSION
#define PROBE_VERSION 1
#endif

typedef struct {
    csp_ws *ws;
    int count;
} sender;

static void *send_from_thread(void *arg) {
    sender *s = (sender *)arg;
    char text[32];
    for (int i = 0; i < s->count; ++i) {
        snprintf(text, sizeof text, "t%d", i);
        if (csp_ws_send_text(s->ws, text) != 0) break;
    }
    free(s);
    return NULL;
}

static void reply_text(csp_ws *ws, const char *format, long a, long b) {
    char text[128];
    snprintf(text, sizeof text, format, a, b);
    csp_ws_send_text(ws, text);
}

static void on_message(csp_ws *ws, const void *data, size_t size, int binary, void *user_data) {
    (void)user_data;
    char command[256];
    if (binary || size >= sizeof command) {
        csp_ws_send(ws, data, size, binary);
        return;
    }
    memcpy(command, data, size);
    command[size] = '\0';
    if (strncmp(command, "close ", 6) == 0) {
        char *rest = NULL;
        const unsigned code = (unsigned)strtoul(command + 6, &rest, 10);
        if (rest && *rest == ' ') ++rest;
        if (csp_ws_close(ws, code, rest && *rest ? rest : NULL) != 0) csp_ws_send_text(ws, "close refused");
    } else if (strncmp(command, "sub ", 4) == 0) {
        char text[300];
        snprintf(text, sizeof text, "%s %s", csp_ws_subscribe(ws, command + 4) == 0 ? "subscribed" : "refused",
                 command + 4);
        csp_ws_send_text(ws, text);
    } else if (strncmp(command, "unsub ", 6) == 0) {
        char text[300];
        snprintf(text, sizeof text, "%s %s", csp_ws_unsubscribe(ws, command + 6) == 0 ? "unsubscribed" : "refused",
                 command + 6);
        csp_ws_send_text(ws, text);
    } else if (strncmp(command, "pub ", 4) == 0) {
        char *topic = command + 4;
        char *text = strchr(topic, ' ');
        if (!text) return;
        *text++ = '\0';
        reply_text(ws, "published %ld", csp_publish_text(ws->api, topic, text), 0);
    } else if (strncmp(command, "pubbig ", 7) == 0) {
        char *topic = command + 7;
        char *count = strchr(topic, ' ');
        if (!count) return;
        *count++ = '\0';
        const size_t n = (size_t)strtoul(count, NULL, 10);
        char *bytes = (char *)malloc(n ? n : 1);
        if (!bytes) return;
        memset(bytes, 'B', n);
        reply_text(ws, "published %ld", csp_publish(ws->api, topic, bytes, n, CSP_WS_BINARY), 0);
        free(bytes);
    } else if (strncmp(command, "flood ", 6) == 0) {
        static char block[64 * 1024];
        long again = 0, refused = 0;
        const long n = strtol(command + 6, NULL, 10);
        for (long i = 0; i < n; ++i) {
            const int r = csp_ws_send(ws, block, sizeof block, CSP_WS_BINARY);
            if (r == CSP_AGAIN) ++again;
            if (r < 0) ++refused;
        }
        reply_text(ws, "flooded %ld %ld", again, refused);
    } else if (strncmp(command, "thread ", 7) == 0) {
        sender *s = (sender *)malloc(sizeof *s);
        pthread_t thread;
        s->ws = ws;
        s->count = atoi(command + 7);
        if (pthread_create(&thread, NULL, send_from_thread, s) == 0) pthread_detach(thread);
        else free(s);
    } else if (strcmp(command, "pid") == 0) {
        reply_text(ws, "pid %ld", (long)getpid(), 0);
    } else if (strcmp(command, "version") == 0) {
        reply_text(ws, "version %ld", PROBE_VERSION, 0);
    } else if (strcmp(command, "hang") == 0) {
        for (;;) pause();
    } else if (strcmp(command, "crash") == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    } else {
        csp_ws_send(ws, data, size, CSP_WS_TEXT);
    }
}

static pthread_mutex_t g_last_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_last_close[160] = "none";

static void on_close(csp_ws *ws, int code, const char *reason, size_t reason_size, void *user_data) {
    (void)ws, (void)user_data;
    pthread_mutex_lock(&g_last_lock);
    snprintf(g_last_close, sizeof g_last_close, "%d %.*s", code, (int)(reason_size > 120 ? 120 : reason_size),
             reason);
    pthread_mutex_unlock(&g_last_lock);
}

static int ws_probe(const csp_request *req, csp_reply *reply) {
    static const csp_ws_callbacks callbacks = {.size = sizeof(csp_ws_callbacks), .on_message = on_message, .on_close = on_close};
    if (csp_query_arg(req, "last").data) {
        pthread_mutex_lock(&g_last_lock);
        csp_reply_puts(reply, g_last_close);
        pthread_mutex_unlock(&g_last_lock);
        return 200;
    }
    csp_str let = csp_query_arg(req, "let");
    if (!let.data || let.size != 2 || memcmp(let.data, "in", 2) != 0) {
        csp_reply_puts(reply, "not let in\n");
        return 403;
    }
    char protocol[64] = "";
    csp_str wanted = csp_query_arg(req, "protocol");
    if (wanted.data && wanted.size < sizeof protocol) memcpy(protocol, wanted.data, wanted.size);
    csp_reply_add_header(reply, "Set-Cookie", "probe=1; Path=/");
    if (!csp_ws_accept(req, reply, &callbacks, protocol[0] ? protocol : NULL)) return csp_ws_refuse(req, reply);
    return CSP_WS_ACCEPTED;
}

CSP_HANDLER(ws_probe)
