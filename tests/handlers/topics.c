/* Topics across hosts (--cluster), for the cluster tests and bench/cluster.py.
 *   WebSocket ?sub=TOPIC     subscribes the conversation to TOPIC; what the topic brings is passed on
 *             &gap=1         it hears on_topic_gap and sends "gap TOPIC" (without, the host closes
 *                            the conversation with 1012 when the topic loses messages)
 *   GET ?pub=TOPIC&tag=T&n=N[&from=S]         publishes "T S" ... "T S+N-1" now, from the loop:
 *                                             answered "published N again A failed F"
 *   GET ...&rate=R                            the same from a thread of its own, R a second; answered
 *                                             at once ("started"); ?done=T says "running P" or
 *                                             "published P again A failed F" once it is over
 *   &pad=B                                    each message carries B more bytes ('.' after the number)
 *   &stamp=1                                  "T K NS": NS is CLOCK_MONOTONIC in ns when it was published
 *                                             (one machine's clock: bench/cluster.py's latencies)
 * Built against the 2.4 header too (test-handlers/abi2_4): a handler older than on_topic_gap,
 * whose conversations the host closes with 1012 instead. */
#include <csp/csp.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kTagMax = 31, kPacers = 32 };

typedef struct {
    char tag[kTagMax + 1];
    char topic[129];
    long from, n, rate, pad, stamp;
    long published, again, failed;
    int running;
    const csp_host_api *api;
} pacer;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pacer g_pacers[kPacers];

static void on_message(csp_ws *ws, const void *data, size_t size, int binary, void *user_data) {
    (void)ws, (void)data, (void)size, (void)binary, (void)user_data;
}

#if CSP_ABI_MINOR >= 5
static void on_topic_gap(csp_ws *ws, const char *topic, size_t topic_size, void *user_data) {
    (void)user_data;
    char text[160];
    snprintf(text, sizeof text, "gap %.*s", (int)(topic_size > 128 ? 128 : topic_size), topic);
    csp_ws_send_text(ws, text);
}
#endif

/* One message: "TAG K" (with `stamp`, " NS") and `pad` dots. 0, CSP_AGAIN or -1, as csp_publish says. */
static int publish_one(const csp_host_api *api, const char *topic, const char *tag, long k, long pad, long stamp) {
    char small[256];
    char *text = small;
    const size_t room = (size_t)pad + 96;
    if (room > sizeof small && !(text = (char *)malloc(room))) return -1;
    int length;
    if (stamp) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        length = snprintf(text, room, "%s %ld %lld", tag, k, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    } else {
        length = snprintf(text, room, "%s %ld", tag, k);
    }
    memset(text + length, '.', (size_t)pad);
    const int result = csp_publish(api, topic, text, (size_t)length + (size_t)pad, CSP_WS_TEXT);
    if (text != small) free(text);
    return result;
}

static void count(long *again, long *failed, int result) {
    if (result == CSP_AGAIN) ++*again;
    else if (result != 0) ++*failed;
}

static void *paced(void *arg) {
    pacer *p = (pacer *)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    const long step_ns = 1000000000L / p->rate;
    for (long i = 0; i < p->n; ++i) {
        long again = 0, failed = 0;
        count(&again, &failed, publish_one(p->api, p->topic, p->tag, p->from + i, p->pad, p->stamp));
        pthread_mutex_lock(&g_lock);
        ++p->published;
        p->again += again;
        p->failed += failed;
        pthread_mutex_unlock(&g_lock);
        next.tv_nsec += step_ns;
        while (next.tv_nsec >= 1000000000L) next.tv_nsec -= 1000000000L, ++next.tv_sec;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    pthread_mutex_lock(&g_lock);
    p->running = 0;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static long number_arg(const csp_request *req, const char *name, long fallback) {
    csp_str value = csp_query_arg(req, name);
    if (!value.data || value.size == 0 || value.size > 18) return fallback;
    char text[20];
    memcpy(text, value.data, value.size);
    text[value.size] = '\0';
    return atol(text);
}

static int copy_arg(const csp_request *req, const char *name, char *out, size_t room) {
    csp_str value = csp_query_arg(req, name);
    if (!value.data || value.size == 0 || value.size >= room) return 0;
    memcpy(out, value.data, value.size);
    out[value.size] = '\0';
    return 1;
}

static int answer_done(const csp_request *req, csp_reply *reply) {
    char tag[kTagMax + 1];
    if (!copy_arg(req, "done", tag, sizeof tag)) return 400;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < kPacers; ++i)
        if (g_pacers[i].tag[0] && strcmp(g_pacers[i].tag, tag) == 0) {
            const pacer p = g_pacers[i];
            pthread_mutex_unlock(&g_lock);
            if (p.running) csp_reply_printf(reply, "running %ld\n", p.published);
            else csp_reply_printf(reply, "published %ld again %ld failed %ld\n", p.published, p.again, p.failed);
            return 200;
        }
    pthread_mutex_unlock(&g_lock);
    csp_reply_puts(reply, "no such publisher\n");
    return 404;
}

static int start_paced(const csp_request *req, csp_reply *reply, const char *topic, const char *tag, long from, long n,
                       long rate, long pad, long stamp) {
    pthread_mutex_lock(&g_lock);
    pacer *slot = NULL;
    for (int i = 0; i < kPacers && !slot; ++i)
        if (!g_pacers[i].running && (!g_pacers[i].tag[0] || strcmp(g_pacers[i].tag, tag) == 0)) slot = &g_pacers[i];
    if (!slot) {
        pthread_mutex_unlock(&g_lock);
        return 503;
    }
    memset(slot, 0, sizeof *slot);
    snprintf(slot->tag, sizeof slot->tag, "%s", tag);
    snprintf(slot->topic, sizeof slot->topic, "%s", topic);
    slot->from = from, slot->n = n, slot->rate = rate, slot->pad = pad, slot->stamp = stamp;
    slot->running = 1;
    slot->api = req->api;
    pthread_t thread;
    const int made = pthread_create(&thread, NULL, paced, slot);
    if (made == 0) pthread_detach(thread);
    else slot->running = 0;
    pthread_mutex_unlock(&g_lock);
    if (made != 0) return 503;
    csp_reply_puts(reply, "started\n");
    return 200;
}

static int topics(const csp_request *req, csp_reply *reply) {
    static const csp_ws_callbacks plain = {.size = sizeof(csp_ws_callbacks), .on_message = on_message};
#if CSP_ABI_MINOR >= 5
    static const csp_ws_callbacks hears_gaps = {
        .size = sizeof(csp_ws_callbacks), .on_message = on_message, .on_topic_gap = on_topic_gap};
#else
    static const csp_ws_callbacks hears_gaps = {.size = sizeof(csp_ws_callbacks), .on_message = on_message};
#endif
    char topic[129], tag[kTagMax + 1];
    if (csp_query_arg(req, "done").data) return answer_done(req, reply);
    if (copy_arg(req, "pub", topic, sizeof topic)) {
        if (!copy_arg(req, "tag", tag, sizeof tag)) return 400;
        const long n = number_arg(req, "n", 1), from = number_arg(req, "from", 0), rate = number_arg(req, "rate", 0),
                   pad = number_arg(req, "pad", 0), stamp = number_arg(req, "stamp", 0);
        if (n < 0 || pad < 0 || pad > 1 << 20 || rate > 1000000) return 400;
        if (rate > 0) return start_paced(req, reply, topic, tag, from, n, rate, pad, stamp);
        long again = 0, failed = 0;
        for (long i = 0; i < n; ++i) count(&again, &failed, publish_one(req->api, topic, tag, from + i, pad, stamp));
        csp_reply_printf(reply, "published %ld again %ld failed %ld\n", n, again, failed);
        return 200;
    }
    if (!copy_arg(req, "sub", topic, sizeof topic)) {
        csp_reply_puts(reply, "?sub=TOPIC (a WebSocket) or ?pub=TOPIC&tag=T&n=N\n");
        return 400;
    }
    csp_str gap = csp_query_arg(req, "gap");
    csp_ws *ws = csp_ws_accept(req, reply, gap.data ? &hears_gaps : &plain, NULL);
    if (!ws) return csp_ws_refuse(req, reply);
    if (csp_ws_subscribe(ws, topic) != 0) csp_ws_close(ws, 1011, "cannot subscribe");
    return CSP_WS_ACCEPTED;
}

CSP_HANDLER(topics)
