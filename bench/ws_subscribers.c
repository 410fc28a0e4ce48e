/* The WebSocket subscribers of bench/cluster.py: one process, one epoll loop, raw frames (the
 * client handshake, then the server's unmasked frames; a ping is answered with a pong), so that
 * reading 100,000 small messages a second costs little of the 2 cores the hosts need.
 *
 *   ws_subscribers SPEC        SPEC: a line per subscriber, "GROUP HOST PORT TOPIC EXPECT":
 *                              GET /csp/topics?sub=TOPIC on 127.0.0.1:PORT (host number HOST);
 *                              EXPECT: how many measured messages it should get
 *
 * Messages (tests/handlers/topics.c): "wH K" is a warm-up from host H; "pH-X K NS" a measured one
 * from host H (NS: CLOCK_MONOTONIC in ns when it was published, this machine's clock). Its latency
 * is the time of the recv() that brought it minus NS, kept at 1 us resolution up to 1 s and at 1 ms
 * up to 1,000 s (past it, counted as 1,000 s), apart for a publisher on the subscriber's own host ("local") and
 * on another ("remote"). Each publisher's numbers are checked per subscriber: duplicates, out of
 * order; what is missing is EXPECT minus what came.
 *
 * Commands, a line each on standard input, each answered with one line of JSON:
 *   status      connections open, closed (and the close codes), and how many have had a warm-up
 *               from another host (then their host's subscription in Redis is in place)
 *   progress G  how many subscribers of group G have their EXPECT
 *   reset       forgets what was measured (latencies, counts, CPU)
 *   report      everything since the last reset, per group and per latency class
 *   quit
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

enum { kHosts = 16, kGroups = 8, kBins = 1000000, kSeconds = 3600, kBuffer = 1 << 18 };

typedef struct {
    int fd, group, host, open, close_code;
    long long expect, count, dups, disorder, unknown;
    long long last[kHosts];
    unsigned warm;
    unsigned char *pending;
    size_t pending_size;
} conn;

typedef struct {
    uint32_t *bins, *slow; /* 1 us bins up to 1 s, 1 ms bins from there to 1,000 s */
    long long n, over, max_ns;
    double sum_us;
} hist;

typedef struct {
    long long n[2], max_ns[2], over5[2];
} second;

static conn *g_conns;
static int g_count;
static hist g_hist[2]; /* 0 local, 1 remote */
static second g_series[kSeconds];
static long long g_t0 = -1, g_frames, g_recvs;
static double g_cpu0;
static unsigned char g_buffer[kBuffer];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what) {
    fprintf(stderr, "ws_subscribers: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void reset(void) {
    for (int k = 0; k < 2; ++k) {
        memset(g_hist[k].bins, 0, sizeof(uint32_t) * kBins);
        memset(g_hist[k].slow, 0, sizeof(uint32_t) * kBins);
        g_hist[k].n = g_hist[k].over = g_hist[k].max_ns = 0;
        g_hist[k].sum_us = 0;
    }
    memset(g_series, 0, sizeof g_series);
    for (int i = 0; i < g_count; ++i) {
        conn *c = &g_conns[i];
        c->count = c->dups = c->disorder = c->unknown = 0;
        for (int h = 0; h < kHosts; ++h) c->last[h] = -1;
    }
    g_t0 = -1;
    g_frames = g_recvs = 0;
    g_cpu0 = cpu_seconds();
}

static void record(int remote, long long latency_ns, long long now) {
    hist *h = &g_hist[remote];
    if (latency_ns < 0) latency_ns = 0;
    const long long us = latency_ns / 1000;
    if (us < kBins) ++h->bins[us];
    else if (us / 1000 < kBins) ++h->slow[us / 1000], ++h->over;
    else ++h->slow[kBins - 1], ++h->over;
    ++h->n;
    h->sum_us += latency_ns / 1e3;
    if (latency_ns > h->max_ns) h->max_ns = latency_ns;
    if (g_t0 < 0) g_t0 = now;
    const long long s = (now - g_t0) / 1000000000LL;
    if (s >= 0 && s < kSeconds) {
        second *x = &g_series[s];
        ++x->n[remote];
        if (latency_ns > x->max_ns[remote]) x->max_ns[remote] = latency_ns;
        if (latency_ns > 5000000) ++x->over5[remote];
    }
}

static long number(const char **p, const char *end) {
    long v = 0;
    while (*p < end && **p >= '0' && **p <= '9') v = v * 10 + (*(*p)++ - '0');
    return v;
}

static void message(conn *c, const unsigned char *data, size_t size, long long now) {
    const char *p = (const char *)data, *end = p + size;
    if (size < 2 || (p[0] != 'w' && p[0] != 'p')) {
        ++c->unknown;
        return;
    }
    const char kind = *p++;
    const long host = number(&p, end);
    if (host >= kHosts) {
        ++c->unknown;
        return;
    }
    if (kind == 'w') {
        c->warm |= 1u << host;
        return;
    }
    while (p < end && *p != ' ') ++p;
    ++p;
    const long long k = number(&p, end);
    if (p >= end || *p != ' ') {
        ++c->unknown;
        return;
    }
    ++p;
    long long stamp = 0;
    while (p < end && *p >= '0' && *p <= '9') stamp = stamp * 10 + (*p++ - '0');
    ++c->count;
    if (k <= c->last[host]) {
        ++c->dups;
        return;
    }
    if (k != c->last[host] + 1) ++c->disorder;
    c->last[host] = k;
    record(host != c->host, now - stamp, now);
}

static void send_all(int fd, const void *data, size_t size) {
    const char *p = data;
    while (size) {
        ssize_t n = send(fd, p, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            usleep(100);
            continue;
        }
        if (n <= 0) return;
        p += n, size -= (size_t)n;
    }
}

static void close_conn(conn *c, int code) {
    if (!c->open) return;
    c->open = 0;
    c->close_code = code;
    close(c->fd);
}

/* Whole frames at the front of buf: handled; returns how many bytes they took. */
static size_t frames(conn *c, const unsigned char *buf, size_t size, long long now) {
    size_t at = 0;
    while (size - at >= 2 && c->open) {
        const unsigned char b0 = buf[at], b1 = buf[at + 1];
        size_t head = 2;
        uint64_t n = b1 & 0x7F;
        if (n == 126) {
            if (size - at < 4) break;
            n = ((uint64_t)buf[at + 2] << 8) | buf[at + 3];
            head = 4;
        } else if (n == 127) {
            if (size - at < 10) break;
            n = 0;
            for (int i = 0; i < 8; ++i) n = (n << 8) | buf[at + 2 + i];
            head = 10;
        }
        if (b1 & 0x80) { /* a server must not mask */
            close_conn(c, -2);
            break;
        }
        if (n > kBuffer / 2) {
            close_conn(c, -3);
            break;
        }
        if (size - at < head + n) break;
        const unsigned char *payload = buf + at + head;
        const int opcode = b0 & 0x0F;
        ++g_frames;
        if (opcode == 1 || opcode == 2) {
            if (!(b0 & 0x80)) ++c->unknown; /* fragments: not expected for these small messages */
            message(c, payload, (size_t)n, now);
        } else if (opcode == 9 && n <= 125) {
            unsigned char pong[6 + 125] = {0x8A, (unsigned char)(0x80 | n), 0, 0, 0, 0};
            memcpy(pong + 6, payload, (size_t)n);
            send_all(c->fd, pong, 6 + (size_t)n);
        } else if (opcode == 8) {
            const int code = n >= 2 ? (payload[0] << 8) | payload[1] : 1005;
            const unsigned char reply[] = {0x88, 0x82, 0, 0, 0, 0, (unsigned char)(code >> 8), (unsigned char)code};
            send_all(c->fd, reply, sizeof reply);
            close_conn(c, code);
        } else if (opcode != 10 && opcode != 0) {
            ++c->unknown;
        }
        at += head + (size_t)n;
    }
    return at;
}

static void readable(conn *c) {
    size_t have = c->pending_size;
    if (have) memcpy(g_buffer, c->pending, have);
    ssize_t n = recv(c->fd, g_buffer + have, kBuffer - have, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        close_conn(c, n == 0 ? -1 : -4); /* -1: closed without a close frame; -4: an error */
        return;
    }
    ++g_recvs;
    const long long now = now_ns();
    have += (size_t)n;
    const size_t used = frames(c, g_buffer, have, now);
    c->pending_size = have - used;
    if (c->pending_size) {
        c->pending = realloc(c->pending, c->pending_size);
        if (!c->pending) die("realloc");
        memcpy(c->pending, g_buffer + used, c->pending_size);
    }
}

static void open_conn(conn *c, int port, const char *topic) {
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    const int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char request[512];
    const int length = snprintf(request, sizeof request,
                                "GET /csp/topics?sub=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                "Sec-WebSocket-Version: 13\r\n\r\n",
                                topic, port);
    send_all(c->fd, request, (size_t)length);
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        ssize_t n = recv(c->fd, g_buffer + have, kBuffer - 1 - have, 0);
        if (n <= 0) die("the handshake");
        have += (size_t)n;
        g_buffer[have] = 0;
        end = strstr((char *)g_buffer, "\r\n\r\n");
    }
    if (strncmp((char *)g_buffer, "HTTP/1.1 101", 12) != 0 ||
        !strstr((char *)g_buffer, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")) {
        fprintf(stderr, "ws_subscribers: port %d topic %s: %.60s\n", port, topic, (char *)g_buffer);
        exit(1);
    }
    c->open = 1;
    const size_t head = (size_t)(end + 4 - (char *)g_buffer);
    c->pending_size = have - head;
    if (c->pending_size) {
        c->pending = malloc(c->pending_size);
        memcpy(c->pending, g_buffer + head, c->pending_size);
    }
}

static double percentile(const hist *h, double q) {
    if (!h->n) return 0;
    const long long want = (long long)(q * (double)h->n + 0.999999);
    long long seen = 0;
    for (long long i = 0; i < kBins; ++i) {
        seen += h->bins[i];
        if (seen >= want && want > 0) return (double)i + 0.5;
    }
    for (long long i = 0; i < kBins; ++i) {
        seen += h->slow[i];
        if (seen >= want && want > 0) return (double)i * 1000 + 500;
    }
    return h->max_ns / 1e3;
}

static void print_hist(const char *name, const hist *h) {
    printf("\"%s\":{\"n\":%lld,\"mean_us\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
           "\"max_us\":%.1f,\"over_1s\":%lld}",
           name, h->n, h->n ? h->sum_us / h->n : 0.0, percentile(h, 0.5), percentile(h, 0.9), percentile(h, 0.99),
           percentile(h, 0.999), h->max_ns / 1e3, h->over);
}

static void command(char *line) {
    if (strncmp(line, "status", 6) == 0) {
        int open = 0, closed = 0, warm = 0;
        printf("{\"codes\":{");
        int first = 1;
        for (int i = 0; i < g_count; ++i) {
            const conn *c = &g_conns[i];
            open += c->open;
            if (!c->open) {
                ++closed;
                printf("%s\"%d\":%d", first ? "" : ",", i, c->close_code);
                first = 0;
            }
            if (c->open && (c->warm & ~(1u << c->host))) ++warm;
        }
        printf("},\"open\":%d,\"closed\":%d,\"warm\":%d,\"of\":%d}\n", open, closed, warm, g_count);
    } else if (strncmp(line, "progress", 8) == 0) {
        const int group = atoi(line + 8);
        int done = 0, of = 0;
        for (int i = 0; i < g_count; ++i)
            if (g_conns[i].group == group) {
                ++of;
                done += g_conns[i].count >= g_conns[i].expect || !g_conns[i].open;
            }
        printf("{\"done\":%d,\"of\":%d}\n", done, of);
    } else if (strncmp(line, "reset", 5) == 0) {
        reset();
        printf("{\"reset\":true}\n");
    } else if (strncmp(line, "report", 6) == 0) {
        const double cpu = cpu_seconds() - g_cpu0;
        printf("{\"frames\":%lld,\"recvs\":%lld,\"cpu_s\":%.3f,", g_frames, g_recvs, cpu);
        print_hist("local", &g_hist[0]);
        printf(",");
        print_hist("remote", &g_hist[1]);
        printf(",\"groups\":{");
        int first = 1;
        for (int g = 0; g < kGroups; ++g) {
            long long conns = 0, open = 0, received = 0, expected = 0, missing = 0, dups = 0, disorder = 0,
                      unknown = 0, complete = 0;
            for (int i = 0; i < g_count; ++i) {
                const conn *c = &g_conns[i];
                if (c->group != g) continue;
                ++conns, open += c->open, received += c->count, expected += c->expect, dups += c->dups;
                disorder += c->disorder, unknown += c->unknown;
                const long long got = c->count - c->dups;
                if (got < c->expect) missing += c->expect - got;
                complete += got == c->expect && !c->dups && !c->disorder && c->open;
            }
            if (!conns) continue;
            printf("%s\"%d\":{\"subscribers\":%lld,\"open\":%lld,\"expected\":%lld,\"received\":%lld,"
                   "\"missing\":%lld,\"duplicates\":%lld,\"disorder\":%lld,\"unknown\":%lld,\"complete\":%lld}",
                   first ? "" : ",", g, conns, open, expected, received, missing, dups, disorder, unknown, complete);
            first = 0;
        }
        printf("},\"seconds\":[");
        int last = -1;
        for (int s = 0; s < kSeconds; ++s)
            if (g_series[s].n[0] || g_series[s].n[1]) last = s;
        for (int s = 0; s <= last; ++s) {
            const second *x = &g_series[s];
            printf("%s[%lld,%.1f,%lld,%lld,%.1f,%lld]", s ? "," : "", x->n[0], x->max_ns[0] / 1e3, x->over5[0],
                   x->n[1], x->max_ns[1] / 1e3, x->over5[1]);
        }
        printf("]}\n");
    } else if (strncmp(line, "quit", 4) == 0) {
        fflush(stdout);
        exit(0);
    } else {
        printf("{\"error\":\"unknown command\"}\n");
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ws_subscribers SPEC (lines: GROUP HOST PORT TOPIC EXPECT)\n");
        return 2;
    }
    FILE *spec = fopen(argv[1], "r");
    if (!spec) die(argv[1]);
    int room = 0;
    int group, host, port;
    long long expect;
    char topic[130];
    for (int k = 0; k < 2; ++k)
        if (!(g_hist[k].bins = calloc(kBins, sizeof(uint32_t))) || !(g_hist[k].slow = calloc(kBins, sizeof(uint32_t))))
            die("calloc");
    while (fscanf(spec, "%d %d %d %129s %lld", &group, &host, &port, topic, &expect) == 5) {
        if (group < 0 || group >= kGroups || host < 0 || host >= kHosts) {
            fprintf(stderr, "ws_subscribers: a group below %d, a host below %d\n", kGroups, kHosts);
            return 2;
        }
        if (g_count == room) {
            room = room ? room * 2 : 1024;
            g_conns = realloc(g_conns, sizeof(conn) * (size_t)room);
            if (!g_conns) die("realloc");
        }
        conn *c = &g_conns[g_count++];
        memset(c, 0, sizeof *c);
        c->group = group, c->host = host, c->expect = expect;
        open_conn(c, port, topic);
    }
    fclose(spec);
    reset();

    const int ep = epoll_create1(0);
    if (ep < 0) die("epoll_create1");
    struct epoll_event e = {.events = EPOLLIN};
    e.data.u64 = (uint64_t)-1;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &e) != 0) die("epoll_ctl stdin");
    for (int i = 0; i < g_count; ++i) {
        e.data.u64 = (uint64_t)i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, g_conns[i].fd, &e) != 0) die("epoll_ctl");
    }
    /* What came with the 101 */
    const long long now = now_ns();
    for (int i = 0; i < g_count; ++i) {
        conn *c = &g_conns[i];
        if (!c->pending_size) continue;
        const size_t used = frames(c, c->pending, c->pending_size, now);
        memmove(c->pending, c->pending + used, c->pending_size - used);
        c->pending_size -= used;
    }
    printf("{\"connected\":%d}\n", g_count);
    fflush(stdout);

    char line[256];
    size_t line_size = 0;
    struct epoll_event events[256];
    for (;;) {
        const int n = epoll_wait(ep, events, 256, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int j = 0; j < n; ++j) {
            if (events[j].data.u64 == (uint64_t)-1) {
                ssize_t got = read(0, line + line_size, sizeof line - 1 - line_size);
                if (got <= 0) return 0; /* the bench went away */
                line_size += (size_t)got;
                char *nl;
                while ((nl = memchr(line, '\n', line_size))) {
                    *nl = 0;
                    command(line);
                    const size_t rest = line_size - (size_t)(nl + 1 - line);
                    memmove(line, nl + 1, rest);
                    line_size = rest;
                }
                if (line_size == sizeof line - 1) line_size = 0;
                continue;
            }
            conn *c = &g_conns[events[j].data.u64];
            if (c->open) readable(c);
        }
    }
}
