/* cspd handler SDK: the only header a handler needs, in C or C++.
 *
 * A handler is a shared object that exports one symbol, `csp_handler`, a
 * descriptor carrying the ABI version and the entry point. Define it with
 * CSP_HANDLER(fn), CSP_HANDLER_WITH_HOOKS(fn, init, cleanup), or their
 * CSP_BLOCKING_ forms for a handler that may block.
 *
 * Versions: 2.0 added blocking handlers, deferred replies, loop timers and fd watches,
 * and sub-paths; 2.1 added streamed replies (csp_reply_stream); 2.2 added form arguments,
 * iteration over arguments and headers, cookies, request ids, logging and the store shared
 * by all workers; 2.3 added CSP_ABORT_NO_BODY and CSP_KV_QUOTA; 2.4 added WebSockets (csp_ws_*)
 * and topics that reach every worker (csp_publish); 2.5 added csp_reply_compress, csp_limit
 * (with csp_reply_too_many) and on_topic_gap (topics across hosts, --cluster). Inline helpers that cost no ABI (escaping, URLs, redirects, Set-Cookie,
 * multipart/form-data) are in csp/text.h, csp/cookies.h and csp/multipart.h, included below.
 *
 *   static int hello(const csp_request *req, csp_reply *reply) {
 *       csp_reply_set_content_type(reply, "text/html");
 *       csp_reply_puts(reply, "<h1>HELLO WORLD</h1>");
 *       return 200;
 *   }
 *   CSP_HANDLER(hello)
 *
 * Threading: the host may call one handler from several threads at once;
 * shared state reached through `req->state` must be thread-safe.
 * Lifetime: every pointer in csp_request and csp_reply is valid during the
 * call, and after csp_reply_defer until the deferred reply is finished. The
 * state pointer lives from init to cleanup.
 *
 * The ABI (see sdk/README.md, "The ABI promise"): from 2.0 on, a handler built
 * against 2.N loads on every host of 2.M with M >= N. What the host fills for a
 * handler (csp_request, csp_host_api, csp_init_context) grows only at the end and
 * carries its size in its first field; the handler's descriptor grows only at the end
 * and carries its size in descriptor_size, after abi_version; csp_reply and csp_str
 * never change. No call ever changes meaning.
 */
#ifndef CSP_CSP_H
#define CSP_CSP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* major.minor: the host refuses another major, and a minor newer than its own. */
#define CSP_ABI_MAJOR 2u
#define CSP_ABI_MINOR 5u
#define CSP_ABI_VERSION ((CSP_ABI_MAJOR << 16) | CSP_ABI_MINOR)

#define CSP_EXPORT __attribute__((visibility("default")))

/* A handler returns this instead of a status after csp_reply_defer: the answer comes later. */
#define CSP_DEFERRED 0xDEFE

/* A byte range. `data == NULL` means "absent", distinct from empty. */
typedef struct csp_str {
    const char *data;
    size_t size;
} csp_str;

typedef struct csp_request csp_request;
typedef struct csp_reply csp_reply;
/* A reply that is finished later, from any thread (csp_reply_defer). */
typedef struct csp_pending csp_pending;
/* A reply whose body is sent as it is written (csp_reply_stream). 2.1 */
typedef struct csp_stream csp_stream;

/* A WebSocket conversation (csp_ws_accept). 2.4 */
typedef struct csp_ws csp_ws;
typedef struct csp_ws_callbacks csp_ws_callbacks;

/* csp_stream_write and csp_stream_event on an event loop: the bytes were taken, but the
 * connection now holds more than its high-water mark; write again after csp_stream_on_writable. */
#define CSP_AGAIN 1

/* Why a pending reply will not reach its client (csp_pending_on_abort). */
enum {
    CSP_ABORT_CLIENT_GONE = 1, /* the client closed the connection */
    CSP_ABORT_TIMEOUT = 2,     /* --pending-timeout passed: the client was answered 504 */
    CSP_ABORT_DRAINING = 3,    /* the server is stopping and its drain deadline is near */
    CSP_ABORT_NO_BODY = 4,     /* 2.3: a HEAD request's stream sent its head; no body is read */
};

/* What csp_loop_watch_fd waits for. */
enum { CSP_READABLE = 1, CSP_WRITABLE = 2 };

typedef void (*csp_abort_fn)(csp_pending *pending, int reason, void *user_data);
typedef void (*csp_timer_fn)(csp_pending *pending, void *user_data);
typedef void (*csp_fd_fn)(csp_pending *pending, int fd, unsigned events, void *user_data);
typedef void (*csp_done_fn)(csp_pending *pending, void *user_data);
typedef void (*csp_writable_fn)(csp_stream *stream, void *user_data);
/* What init is told with CSP_HANDLER_WITH_CONTEXT (2.2). */
typedef struct csp_init_context csp_init_context;

/* Services the host implements; handlers reach them through the inline
 * functions below, never directly. Grows only at the end. */
typedef struct csp_host_api {
    size_t size; /* bytes of this table the host fills */
    /* Grows reply->data to hold at least `capacity` bytes; 0 on success. */
    int (*reply_reserve)(csp_reply *reply, size_t capacity);
    /* The host copies the value; 0 on success, -1 if it is empty or holds a control
     * character (CR, LF, NUL...): it must be a valid header field value. */
    int (*reply_set_content_type)(csp_reply *reply, const char *type, size_t size);
    /* The host copies both; -1 for an invalid name, a value with CR/LF, or a host-owned header. */
    int (*reply_add_header)(csp_reply *reply, const char *name, size_t name_size,
                            const char *value, size_t value_size);
    /* Percent-decoded value of the first `name=` in the query string. */
    csp_str (*request_query_arg)(const csp_request *req, const char *name, size_t name_size);
    /* Case-insensitive header lookup; the first match. */
    csp_str (*request_header)(const csp_request *req, const char *name, size_t name_size);
    /* 2.0: replies that finish later. */
    csp_pending *(*reply_defer)(csp_reply *reply);
    csp_reply *(*pending_reply)(csp_pending *pending);
    int (*pending_finish)(csp_pending *pending, int status);
    int (*pending_on_abort)(csp_pending *pending, csp_abort_fn fn, void *user_data);
    int (*loop_timer)(csp_pending *pending, unsigned milliseconds, csp_timer_fn fn, void *user_data);
    int (*loop_watch_fd)(csp_pending *pending, int fd, unsigned events, csp_fd_fn fn, void *user_data);
    int (*pending_on_done)(csp_pending *pending, csp_done_fn fn, void *user_data);
    /* 2.1: streamed replies. */
    csp_stream *(*reply_stream)(csp_reply *reply, int status);
    int (*stream_write)(csp_stream *stream, const void *bytes, size_t size);
    int (*stream_event)(csp_stream *stream, const char *event, size_t event_size, const char *data,
                        size_t data_size);
    int (*stream_end)(csp_stream *stream);
    int (*stream_on_writable)(csp_stream *stream, csp_writable_fn fn, void *user_data);
    csp_pending *(*stream_pending)(csp_stream *stream);
    /* 2.2: the toolkit. */
    csp_str (*request_form_arg)(const csp_request *req, const char *name, size_t name_size);
    int (*request_arg_at)(const csp_request *req, size_t index, csp_str *name, csp_str *value);
    int (*request_header_at)(const csp_request *req, size_t index, csp_str *name, csp_str *value);
    csp_str (*request_cookie)(const csp_request *req, const char *name, size_t name_size);
    csp_str (*request_id)(const csp_request *req);
    int (*log)(const csp_request *req, int level, const char *text, size_t size);
    int (*kv_get)(const csp_request *req, const char *key, size_t key_size, void *out, size_t out_size,
                  size_t *value_size);
    int (*kv_put)(const csp_request *req, const char *key, size_t key_size, const void *value,
                  size_t value_size, unsigned ttl_seconds);
    int (*kv_delete)(const csp_request *req, const char *key, size_t key_size);
    int (*kv_add)(const csp_request *req, const char *key, size_t key_size, int64_t delta, int64_t *result);
    int (*reply_cache)(csp_reply *reply, unsigned seconds);
    int (*reply_cache_vary)(csp_reply *reply, const char *header, size_t header_size);
    csp_str (*config)(const csp_init_context *ctx, const char *key, size_t key_size);
    int (*config_at)(const csp_init_context *ctx, size_t index, csp_str *key, csp_str *value);
    int (*init_log)(const csp_init_context *ctx, int level, const char *text, size_t size);
    /* 2.4: WebSockets and topics. */
    csp_ws *(*ws_accept)(const csp_request *req, csp_reply *reply, const csp_ws_callbacks *callbacks,
                         const char *protocol, size_t protocol_size);
    int (*ws_refuse)(const csp_request *req, csp_reply *reply);
    int (*ws_send)(csp_ws *ws, const void *data, size_t size, int binary);
    int (*ws_close)(csp_ws *ws, unsigned code, const char *reason, size_t reason_size);
    int (*ws_subscribe)(csp_ws *ws, const char *topic, size_t topic_size);
    int (*ws_unsubscribe)(csp_ws *ws, const char *topic, size_t topic_size);
    int (*publish)(const char *topic, size_t topic_size, const void *data, size_t size, int binary);
    /* 2.5: compression, and limits a handler keys itself. */
    int (*reply_compress)(csp_reply *reply, int mode);
    unsigned (*limit)(const csp_request *req, const char *key, size_t key_size, double rate_per_s, unsigned burst);
} csp_host_api;

/* Read-only view of one request. Grows only at the end. */
struct csp_request {
    size_t size;         /* bytes of this struct the host fills */
    const csp_host_api *api;
    csp_str method;      /* "GET", "POST", ... */
    csp_str path;        /* percent-decoded, e.g. "/csp/users/42" */
    csp_str query;       /* raw text after '?', empty when none */
    csp_str body;        /* whole body, de-chunked */
    csp_str client_addr; /* "127.0.0.1" or "::1" */
    unsigned short client_port;
    unsigned char http_major, http_minor;
    void *state;         /* what init stored; NULL without init */
    const void *host;    /* host-private */
    csp_str path_info;   /* 2.0: the path after /csp/NAME: "" or text starting with '/' */
};

/* A handle on a deferred reply; both fields are the host's (the handle is opaque). */
struct csp_pending {
    const csp_host_api *api;
    void *host;
};

/* A handle on a streamed reply; both fields are the host's (the handle is opaque). 2.1 */
struct csp_stream {
    const csp_host_api *api;
    void *host;
};

/* A handle on a WebSocket conversation; both fields are the host's (the handle is opaque). 2.4 */
struct csp_ws {
    const csp_host_api *api;
    void *host;
};

/* The reply buffer: the body is appended in place, G-WAN xbuf style. */
struct csp_reply {
    char *data;
    size_t size;
    size_t capacity;
    const csp_host_api *api;
    void *host; /* host-private */
};

/* What an init of CSP_HANDLER_WITH_CONTEXT is told (2.2); valid during init only. Grows only at the end. */
struct csp_init_context {
    size_t size;            /* bytes of this struct the host fills */
    const csp_host_api *api;
    csp_str name;           /* the handler's name: "hello" for hello.so */
    unsigned worker_index;  /* which worker process loads it, 0 .. worker_count - 1; CSP_VETTING
                             * while it is tried in the short-lived vetting process */
    unsigned worker_count;  /* worker processes of this server (1 with --single-process) */
    const void *host;       /* host-private */
};
#define CSP_VETTING 0xFFFFFFFFu

typedef int (*csp_handle_fn)(const csp_request *req, csp_reply *reply);
/* Called once on load; store per-version state in *state. Nonzero refuses the load. */
typedef int (*csp_init_fn)(void **state);
/* Called once before unload, after the last request on this version, and after every
 * deferred reply of this version has been finished. */
typedef void (*csp_cleanup_fn)(void *state);
/* 2.2: init with a context: the handler's name, its worker, its configuration (csp_config). */
typedef int (*csp_init_context_fn)(const csp_init_context *ctx, void **state);

/* csp_handler_descriptor.flags */
#define CSP_HANDLER_BLOCKING 1u /* calls run on the worker's thread pool, never on an event loop */

typedef struct csp_handler_descriptor {
    unsigned abi_version;     /* CSP_ABI_VERSION; checked before anything else */
    unsigned descriptor_size; /* sizeof(csp_handler_descriptor) */
    csp_handle_fn handle;     /* returns the HTTP status, 200..599, or CSP_DEFERRED; anything else
                               * becomes a 500 */
    csp_init_fn init;         /* optional */
    csp_cleanup_fn cleanup;   /* optional */
    unsigned flags;           /* 2.0: CSP_HANDLER_BLOCKING */
    csp_init_context_fn init_with_context; /* 2.2: optional; called instead of `init` */
} csp_handler_descriptor;

#ifdef __cplusplus
#define CSP_EXTERN_C extern "C"
#else
#define CSP_EXTERN_C
#endif

#define CSP_DESCRIPTOR_(handle_fn, init_fn, cleanup_fn, flags, context_init_fn)  \
    CSP_EXTERN_C CSP_EXPORT const csp_handler_descriptor csp_handler = {          \
        CSP_ABI_VERSION, (unsigned)sizeof(csp_handler_descriptor), (handle_fn),   \
        (init_fn), (cleanup_fn), (flags), (context_init_fn)};

#define CSP_HANDLER_WITH_HOOKS(handle_fn, init_fn, cleanup_fn) \
    CSP_DESCRIPTOR_(handle_fn, init_fn, cleanup_fn, 0u, NULL)
#define CSP_HANDLER(handle_fn) CSP_HANDLER_WITH_HOOKS(handle_fn, NULL, NULL)

/* A handler that may block (a synchronous database call, a slow file): the host runs its
 * calls on a per-worker thread pool (--blocking-threads) and sends the reply from the loop. */
#define CSP_BLOCKING_HANDLER_WITH_HOOKS(handle_fn, init_fn, cleanup_fn) \
    CSP_DESCRIPTOR_(handle_fn, init_fn, cleanup_fn, CSP_HANDLER_BLOCKING, NULL)
#define CSP_BLOCKING_HANDLER(handle_fn) CSP_BLOCKING_HANDLER_WITH_HOOKS(handle_fn, NULL, NULL)

/* 2.2: `init_fn` is `int init(const csp_init_context *ctx, void **state)`: it is told the handler's
 * name, its worker and its configuration (csp_config). */
#define CSP_HANDLER_WITH_CONTEXT(handle_fn, init_fn, cleanup_fn) \
    CSP_DESCRIPTOR_(handle_fn, NULL, cleanup_fn, 0u, init_fn)
#define CSP_BLOCKING_HANDLER_WITH_CONTEXT(handle_fn, init_fn, cleanup_fn) \
    CSP_DESCRIPTOR_(handle_fn, NULL, cleanup_fn, CSP_HANDLER_BLOCKING, init_fn)

/* ---- reply ---------------------------------------------------------- */

/* Appends `size` bytes (binary-safe). 0 on success, -1 when out of memory. */
static inline int csp_reply_append(csp_reply *reply, const void *bytes, size_t size) {
    if (size > reply->capacity - reply->size &&
        reply->api->reply_reserve(reply, reply->size + size) != 0)
        return -1;
    if (size) memcpy(reply->data + reply->size, bytes, size);
    reply->size += size;
    return 0;
}

/* Appends a NUL-terminated string. */
static inline int csp_reply_puts(csp_reply *reply, const char *text) {
    return csp_reply_append(reply, text, strlen(text));
}

static inline int csp_reply_vprintf(csp_reply *reply, const char *format, va_list args) {
    va_list again;
    va_copy(again, args);
    size_t room = reply->capacity - reply->size;
    int needed = vsnprintf(reply->data ? reply->data + reply->size : NULL, room, format, args);
    if (needed < 0) {
        va_end(again);
        return -1;
    }
    if ((size_t)needed >= room) {
        if (reply->api->reply_reserve(reply, reply->size + (size_t)needed + 1) != 0) {
            va_end(again);
            return -1;
        }
        vsnprintf(reply->data + reply->size, (size_t)needed + 1, format, again);
    }
    va_end(again);
    reply->size += (size_t)needed;
    return 0;
}

/* printf-style append. */
__attribute__((format(printf, 2, 3)))
static inline int csp_reply_printf(csp_reply *reply, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int result = csp_reply_vprintf(reply, format, args);
    va_end(args);
    return result;
}

/* Default is "text/html; charset=utf-8". */
static inline int csp_reply_set_content_type(csp_reply *reply, const char *type) {
    return reply->api->reply_set_content_type(reply, type, strlen(type));
}

/* Adds a response header. The host owns Content-Length, Transfer-Encoding, Connection,
 * Date, Server and Content-Type (use csp_reply_set_content_type): those give -1. */
static inline int csp_reply_add_header(csp_reply *reply, const char *name, const char *value) {
    return reply->api->reply_add_header(reply, name, strlen(name), value, strlen(value));
}

/* ---- request -------------------------------------------------------- */

static inline csp_str csp_query_arg(const csp_request *req, const char *name) {
    return req->api->request_query_arg(req, name, strlen(name));
}

static inline csp_str csp_header(const csp_request *req, const char *name) {
    return req->api->request_header(req, name, strlen(name));
}

/* ---- arguments, headers, cookies, request ids (2.2) -------------------- */

/* The first `name` argument of the query string or, when the body is
 * application/x-www-form-urlencoded, of the body (the query first). Percent-decoded, `+` as a
 * space. `.data == NULL` if absent, or if its value holds a bad %-escape. */
static inline csp_str csp_form_arg(const csp_request *req, const char *name) {
    return req->api->request_form_arg(req, name, strlen(name));
}

/* Argument number `index` (0, 1, ...): those of the query string, then those of an
 * application/x-www-form-urlencoded body, in order, repeated names included; names and values
 * decoded as csp_form_arg's. 0, or -1 past the last one.
 *   csp_str name, value;
 *   for (size_t i = 0; csp_arg_at(req, i, &name, &value) == 0; ++i) ...  */
static inline int csp_arg_at(const csp_request *req, size_t index, csp_str *name, csp_str *value) {
    return req->api->request_arg_at(req, index, name, value);
}

/* Header number `index` as it came (repeated names included, in order); 0, or -1 past the last. */
static inline int csp_header_at(const csp_request *req, size_t index, csp_str *name, csp_str *value) {
    return req->api->request_header_at(req, index, name, value);
}

/* The value of the first cookie called `name` in the request's Cookie headers, without the double
 * quotes that may surround it, otherwise as sent (cookie values are not percent-decoded).
 * `.data == NULL` if absent. */
static inline csp_str csp_cookie(const csp_request *req, const char *name) {
    return req->api->request_cookie(req, name, strlen(name));
}

/* This request's id: the client's X-Request-Id when it is sane (1 to 128 characters of
 * A-Z a-z 0-9 and - _ . : / + = @), else one made by the host. It tags the request's log lines,
 * and is sent back in X-Request-Id with --request-id-header. */
static inline csp_str csp_request_id(const csp_request *req) {
    return req->api->request_id(req);
}

/* ---- the reply cache (2.2) -------------------------------------------- */

/* Asks the host to keep this reply and answer later GET and HEAD requests for the same Host, path
 * and query with it, from memory and without calling the handler, for `seconds` (0: do not
 * keep it; at most a year). Only for a reply to a GET without a body that is answered whole (now,
 * or by csp_pending_finish; never a stream), with a status below 500 other than 206 and 304.
 * Never kept: a reply with a Set-Cookie header, or one to a request that carried Cookie or
 * Authorization, unless the handler varies on that header (csp_reply_cache_vary). Each event loop
 * keeps its own entries, at most --cache-size MiB per worker in all, least recently used evicted
 * first; a new version of the handler forgets its entries. 0, or -1 past a year. */
static inline int csp_reply_cache(csp_reply *reply, unsigned seconds) {
    return reply->api->reply_cache(reply, seconds);
}

/* Makes every value of request header `name` part of the cached reply's key (up to 8 headers):
 * "Accept-Language", or "Cookie" for replies that differ per visitor. Every reply of a handler
 * should name the same headers; a reply naming others starts the handler's entries afresh.
 * 0, or -1 for a name that is not a token or a ninth header. */
static inline int csp_reply_cache_vary(csp_reply *reply, const char *name) {
    return reply->api->reply_cache_vary(reply, name, strlen(name));
}

/* ---- compression (2.5) ------------------------------------------------ */

/* Whether this answer may be compressed (sdk/README.md, "Compression"). */
typedef enum csp_compress {
    CSP_COMPRESS_AUTO = 0, /* the default: as --compress-* say, when the client accepts a coding */
    CSP_COMPRESS_OFF = 1,  /* sent as it is: e.g. a secret beside text an attacker chose (BREACH) */
} csp_compress;

/* Sets whether this reply may be compressed; for a stream, call it before csp_reply_stream, which
 * settles the stream's coding.
 * Handlers built before 2.5 get CSP_COMPRESS_AUTO. 0, or -1 for another mode. */
static inline int csp_reply_compress(csp_reply *reply, csp_compress mode) {
    return reply->api->reply_compress(reply, (int)mode);
}

/* ---- limits a handler keys itself (2.5) ---------------------------------- */

/* Charges one request to `key` (an API key, a user id, a route: any bytes, NUL-terminated here)
 * in a bucket of `rate_per_s` requests a second after a burst of `burst`, shared by every worker
 * of the host, and kept apart from other handlers' keys of the same name (sdk/README.md, "Limits").
 * Returns 0 if the request may go on, or the whole seconds to wait (at least 1): answer with
 * csp_reply_too_many. A rate not above 0 lets every request in. */
static inline unsigned csp_limit(const csp_request *req, const char *key, double rate_per_s, unsigned burst) {
    return req->api->limit(req, key, strlen(key), rate_per_s, burst);
}

/* 429 Too Many Requests with Retry-After: `seconds` and a short text body; return what it returns
 * from the handler: `return csp_reply_too_many(reply, wait);`. Costs no ABI. */
static inline int csp_reply_too_many(csp_reply *reply, unsigned seconds) {
    char value[16];
    snprintf(value, sizeof value, "%u", seconds ? seconds : 1u);
    csp_reply_add_header(reply, "Retry-After", value);
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    csp_reply_puts(reply, "429 Too Many Requests\n");
    return 429;
}

/* ---- configuration (2.2) ---------------------------------------------- */

/* A log line is formatted on the stack, cut to fit. */
#define CSP_LOG_LINE_ 2048
static inline size_t csp_format_line_(char *line, const char *format, va_list args) {
    const int n = vsnprintf(line, CSP_LOG_LINE_, format, args);
    if (n < 0) return (size_t)-1;
    return (size_t)n < CSP_LOG_LINE_ ? (size_t)n : CSP_LOG_LINE_ - 1;
}

/* The value of `key` in the handler's configuration: NAME.conf ("key = value" lines) or NAME.json
 * (an object; nested keys dotted: "db.host") beside NAME.so, read when the version loads; a change
 * to the file loads the handler again. `.data == NULL` if the key is absent or there is no file.
 * During init only: copy what you need into the state. */
static inline csp_str csp_config(const csp_init_context *ctx, const char *key) {
    return ctx->api->config(ctx, key, strlen(key));
}

/* Entry number `index` of the configuration, in the file's order. 0, or -1 past the last. */
static inline int csp_config_at(const csp_init_context *ctx, size_t index, csp_str *key, csp_str *value) {
    return ctx->api->config_at(ctx, index, key, value);
}

/* As csp_log, from init: tagged with the handler's name and the file being loaded. */
__attribute__((format(printf, 3, 4)))
static inline int csp_init_log(const csp_init_context *ctx, int level, const char *format, ...) {
    char line[CSP_LOG_LINE_];
    va_list args;
    va_start(args, format);
    const size_t n = csp_format_line_(line, format, args);
    va_end(args);
    return n == (size_t)-1 ? -1 : ctx->api->init_log(ctx, level, line, n);
}

/* ---- logging (2.2) ------------------------------------------------------ */

enum { CSP_LOG_DEBUG = 0, CSP_LOG_INFO = 1, CSP_LOG_WARN = 2, CSP_LOG_ERROR = 3 };

/* Writes one line into cspd's log at `level`, tagged with the handler's name and version and the
 * request's id. Control characters (a line break...) are escaped, so a line is always one line;
 * past 2000 bytes it is cut. Rate-limited per handler and worker (--handler-log-rate lines a
 * second, bursts of twice that): the lines over it are dropped and counted, and the next line
 * that passes says how many. 0 if written, 1 if dropped, -1 for a bad level. From any thread,
 * during the call or while the request's reply is deferred. */
__attribute__((format(printf, 3, 4)))
static inline int csp_log(const csp_request *req, int level, const char *format, ...) {
    char line[CSP_LOG_LINE_];
    va_list args;
    va_start(args, format);
    const size_t n = csp_format_line_(line, format, args);
    va_end(args);
    return n == (size_t)-1 ? -1 : req->api->log(req, level, line, n);
}

/* ---- the store shared by all workers (2.2) ------------------------------ */

/* What the csp_kv_* calls give besides 0. */
enum {
    CSP_KV_ABSENT = -1,      /* no such key (or it expired) */
    CSP_KV_FULL = -2,        /* every entry is taken (--kv-entries) */
    CSP_KV_TOO_BIG = -3,     /* key over 128 bytes, or value over --kv-value-max; or an empty key */
    CSP_KV_NOT_INTEGER = -4, /* csp_kv_add on a value that is not a decimal int64, or overflow */
    CSP_KV_UNAVAILABLE = -5, /* this server runs without a store (--kv-entries 0) */
    CSP_KV_QUOTA = -6,       /* 2.3: this handler holds its share of the entries (--kv-quota); built
                                before 2.3, it is told CSP_KV_FULL */
};
/* csp_kv_add's answer when it could not add (the reason is logged). */
#define CSP_KV_ERROR INT64_MIN

/* One store per server: every worker (and every handler: prefix your keys) sees the same
 * entries, and they outlive worker restarts and handler reloads (not the server). An entry is
 * charged to the handler that last wrote it, and a handler may hold at most its share of the
 * entries (--kv-quota, a percentage of --kv-entries): one handler cannot fill the store for the
 * others. Keys are 1 to 128 bytes, values up to --kv-value-max bytes, both binary-safe.
 * Operations are atomic. From any thread, during the call or while the reply is deferred. */

/* Copies the value of `key` into `out` (at most `out_size` bytes) and sets *value_size to its full
 * size (which may be more than out_size). 0, or CSP_KV_ABSENT. */
static inline int csp_kv_get(const csp_request *req, const char *key, void *out, size_t out_size,
                             size_t *value_size) {
    return req->api->kv_get(req, key, strlen(key), out, out_size, value_size);
}

/* Stores `size` bytes under `key`, replacing what was there; it expires after `ttl_seconds`
 * (0: never). The entry is charged to this handler until another writes it. 0, CSP_KV_FULL,
 * CSP_KV_QUOTA or CSP_KV_TOO_BIG. */
static inline int csp_kv_put(const csp_request *req, const char *key, const void *value, size_t size,
                             unsigned ttl_seconds) {
    return req->api->kv_put(req, key, strlen(key), value, size, ttl_seconds);
}

/* Removes `key`. 0, or CSP_KV_ABSENT. */
static inline int csp_kv_delete(const csp_request *req, const char *key) {
    return req->api->kv_delete(req, key, strlen(key));
}

/* Adds `delta` to the integer under `key` (absent counts as 0; the value is kept as decimal text,
 * so csp_kv_get reads "42") and returns the new value; CSP_KV_ERROR when it could not (full, over
 * the quota, not an integer, overflow), the reason logged. An existing entry keeps its expiry. */
static inline int64_t csp_kv_add(const csp_request *req, const char *key, int64_t delta) {
    int64_t result = 0;
    return req->api->kv_add(req, key, strlen(key), delta, &result) == 0 ? result : CSP_KV_ERROR;
}

/* ---- deferred replies (2.0) ------------------------------------------- */

/* Turns this call's reply into one finished later: the handler then returns CSP_DEFERRED.
 * Call it during the call, once. The request and everything it points at stay valid until
 * the reply is finished; pipelined requests behind it wait their turn. NULL if the host
 * cannot (out of memory): then answer now. */
static inline csp_pending *csp_reply_defer(csp_reply *reply) {
    return reply->api->reply_defer(reply);
}

/* The reply to fill before csp_pending_finish, with the usual csp_reply_* calls. From any
 * thread, one thread at a time. NULL for a NULL pending. */
static inline csp_reply *csp_pending_reply(csp_pending *pending) {
    return pending ? pending->api->pending_reply(pending) : NULL;
}

/* Sends the reply with `status` (200..599; anything else sends 500). From any thread,
 * exactly once; `pending` must not be used after it. Also after an abort (the reply is
 * dropped). Never waits. 0, or -1 if the client will not see it (it went away, or timed out). */
static inline int csp_pending_finish(csp_pending *pending, int status) {
    return pending ? pending->api->pending_finish(pending, status) : -1;
}

/* `fn(pending, reason, user_data)` runs on the event loop: once with CSP_ABORT_DRAINING
 * as a warning that the server stops soon, and once when the reply will not reach its
 * client (CSP_ABORT_CLIENT_GONE, CSP_ABORT_TIMEOUT, or CSP_ABORT_DRAINING when the server
 * stopped first). Set it once. The handler must still call csp_pending_finish. */
static inline int csp_pending_on_abort(csp_pending *pending, csp_abort_fn fn, void *user_data) {
    return pending ? pending->api->pending_on_abort(pending, fn, user_data) : -1;
}

/* `fn(pending, user_data)` runs on the event loop once the reply is done -- finished and
 * taken in -- and no callback of it will run again: the place to free what callbacks use.
 * `pending` is only a name there; nothing may be called on it. Set it once. */
static inline int csp_pending_on_done(csp_pending *pending, csp_done_fn fn, void *user_data) {
    return pending ? pending->api->pending_on_done(pending, fn, user_data) : -1;
}

/* On the event loop that owns `pending` (call these from the handler's call on a loop, or
 * from a callback the loop ran): `fn` runs once, on that loop, after `milliseconds`, or
 * once `fd` is ready for `events` (CSP_READABLE | CSP_WRITABLE; the host never closes
 * `fd`). Register again to wait again. A callback does not start once the loop has taken
 * the reply's finish in (one may still run while another thread calls csp_pending_finish:
 * free what callbacks use in csp_pending_on_done). 0, or -1 (not on the loop's thread,
 * a blocking handler, bad arguments). */
static inline int csp_loop_timer(csp_pending *pending, unsigned milliseconds, csp_timer_fn fn, void *user_data) {
    return pending ? pending->api->loop_timer(pending, milliseconds, fn, user_data) : -1;
}

static inline int csp_loop_watch_fd(csp_pending *pending, int fd, unsigned events, csp_fd_fn fn, void *user_data) {
    return pending ? pending->api->loop_watch_fd(pending, fd, events, fn, user_data) : -1;
}

/* ---- streamed replies (2.1) ------------------------------------------ */

/* Sends the head now -- `status` (200..599, not 204, 205 or 304), the content type and headers set so
 * far -- and turns the reply into a stream: its body is what csp_stream_write writes, chunked on
 * HTTP/1.1 and delimited by the connection's close on HTTP/1.0. A HEAD request gets the head alone
 * and its exchange ends there, whatever the handler does next: later writes give -1 and
 * csp_pending_on_abort's callback hears CSP_ABORT_NO_BODY (CSP_ABORT_CLIENT_GONE for handlers
 * built before 2.3); the stream must still be ended or finished as usual. Bytes already appended to the reply are its
 * first bytes; the reply is not used after this. The handler then returns CSP_DEFERRED. Call it
 * during the call, or later on a deferred reply (csp_pending_reply), once. The request stays
 * valid, and pipelined requests wait, until the stream ends. A stream that writes nothing for
 * --pending-timeout is cut (the connection closes). NULL for a bad status, a reply that is
 * already a stream or finished, or no memory: then answer as usual. */
static inline csp_stream *csp_reply_stream(csp_reply *reply, int status) {
    return reply->api->reply_stream(reply, status);
}

/* Appends `size` bytes to the stream. From any thread, one thread at a time. On an event loop it
 * never waits: it returns CSP_AGAIN when, these bytes taken, the connection holds more than its
 * high-water mark (256 KiB); write again once csp_stream_on_writable's callback runs (a stream
 * that keeps writing regardless is cut at 32 times the mark). On any other thread it waits for
 * room instead. 0; CSP_AGAIN; -1 when the client will not see it (it went away, or the stream
 * was cut or ended). */
static inline int csp_stream_write(csp_stream *stream, const void *bytes, size_t size) {
    return stream ? stream->api->stream_write(stream, bytes, size) : -1;
}

static inline int csp_stream_puts(csp_stream *stream, const char *text) {
    return csp_stream_write(stream, text, strlen(text));
}

/* Writes one server-sent event (the stream's content type should be "text/event-stream"):
 * "event: EVENT" unless `event` is NULL or empty, one "data: " line per line of `data`, and the
 * blank line that ends it, in one write. Returns as csp_stream_write; -1 if `event` holds a
 * line break. */
static inline int csp_stream_event(csp_stream *stream, const char *event, const char *data) {
    return stream ? stream->api->stream_event(stream, event, event ? strlen(event) : 0, data,
                                              data ? strlen(data) : 0)
                  : -1;
}

/* Ends the body (the last chunk on HTTP/1.1; the close on HTTP/1.0). From any thread, once;
 * `stream` must not be used after it. Never waits. 0, or -1 if the client will not see the end.
 * To cut a stream short instead -- the client then sees an incomplete body -- finish its pending
 * with a status of 400 or more: csp_pending_finish(csp_stream_pending(s), 500). */
static inline int csp_stream_end(csp_stream *stream) {
    return stream ? stream->api->stream_end(stream) : -1;
}

/* `fn(stream, user_data)` runs on the event loop each time the connection has room again after
 * a write returned CSP_AGAIN (below half the high-water mark). Set it once. */
static inline int csp_stream_on_writable(csp_stream *stream, csp_writable_fn fn, void *user_data) {
    return stream ? stream->api->stream_on_writable(stream, fn, user_data) : -1;
}

/* The stream's deferred reply: csp_pending_on_abort (the client went away: writes now give -1),
 * csp_pending_on_done, csp_loop_timer and csp_loop_watch_fd work on it as on any deferred reply.
 * csp_pending_finish on it ends the stream: cleanly below 400, cut short from 400 on. */
static inline csp_pending *csp_stream_pending(csp_stream *stream) {
    return stream ? stream->api->stream_pending(stream) : NULL;
}

/* ---- WebSockets (2.4) ------------------------------------------------ */

/* What a handler returns after csp_ws_accept: the host answers 101 Switching Protocols. */
#define CSP_WS_ACCEPTED 101

/* What a WebSocket's messages carry. */
enum { CSP_WS_TEXT = 0, CSP_WS_BINARY = 1 };

/* What the host tells a handler about its WebSocket. Each runs on the event loop that holds the
 * connection, one at a time for one csp_ws, with the `user_data` given here; like a handler's call
 * on a loop, it must not block. Grows only at the end. */
struct csp_ws_callbacks {
    size_t size; /* sizeof(csp_ws_callbacks) */
    /* A whole message: text (valid UTF-8, checked) or binary, reassembled from its fragments, at most
     * --ws-max-message bytes. `data` is valid during the call. Optional. */
    void (*on_message)(csp_ws *ws, const void *data, size_t size, int binary, void *user_data);
    /* The conversation is over; once, and last: no callback runs after it, and the handle is not
     * valid once it returns (another thread that sends must stop before: sends made meanwhile give
     * -1). `code` is the peer's close code, 1005 if its close frame had none, 1006 if it went
     * without one; or the host's when the host ended it: 1001 (the server drains, or the peer stayed
     * silent or stopped answering pings), 1002 (a protocol error), 1007 (invalid UTF-8), 1009 (a
     * message over --ws-max-message), 1011 (a callback threw). `reason` is valid during the call.
     * The place to free `user_data`. Optional. */
    void (*on_close)(csp_ws *ws, int code, const char *reason, size_t reason_size, void *user_data);
    /* The connection has room again after a send on a loop returned CSP_AGAIN. Optional. */
    void (*on_writable)(csp_ws *ws, void *user_data);
    void *user_data;
    /* 2.5: messages published to `topic` (one this conversation subscribes to) were lost for good
     * on their way from other hosts (--cluster: a cut longer than the topic's history, or a Redis
     * that lost its data). The conversation goes on with the messages after them; reload what the
     * client shows from the source of truth. `topic` is valid during the call. Optional: without
     * it, or from a handler built before 2.5, the host closes the conversation with 1012 ("service
     * restart"), which tells the client to reconnect and reload. Never silence. */
    void (*on_topic_gap)(csp_ws *ws, const char *topic, size_t topic_size, void *user_data);
};

/* Accepts the request as a WebSocket (RFC 6455 over HTTP/1.1, on the plain and the TLS port): after
 * this call the handler returns CSP_WS_ACCEPTED and the host answers 101 with the headers set on the
 * reply (Set-Cookie...); its body is not sent. `protocol` is the subprotocol chosen among those the
 * client offered in Sec-WebSocket-Protocol (NULL: none). The callbacks are copied; they start
 * once the handler has returned. During the call, once. The conversation pins the handler's version:
 * a reload sends new conversations to the new version and leaves this one talking to the old until
 * it closes. Over HTTP/2 (RFC 8441's extended CONNECT) the host answers 200 instead of 101. From a
 * blocking handler the answer goes once the call has returned (sends during that call never wait).
 * NULL when the request is not a valid opening handshake (answer with csp_ws_refuse), for a protocol
 * the client did not offer, after csp_reply_defer or csp_reply_stream, when the client has gone, or
 * when the host cannot: then answer as usual. */
static inline csp_ws *csp_ws_accept(const csp_request *req, csp_reply *reply, const csp_ws_callbacks *callbacks,
                                    const char *protocol) {
    return req->api->ws_accept(req, reply, callbacks, protocol, protocol ? strlen(protocol) : 0);
}

/* Fills the reply with the answer a request that is not a valid opening handshake gets, and returns
 * its status: 426 with "Upgrade: websocket" when it does not ask for one, 426 with
 * "Sec-WebSocket-Version: 13" for another version, 400 when it asks wrongly.
 *   if (!csp_ws_accept(req, reply, &callbacks, NULL)) return csp_ws_refuse(req, reply); */
static inline int csp_ws_refuse(const csp_request *req, csp_reply *reply) {
    return req->api->ws_refuse(req, reply);
}

/* Sends one message, text (CSP_WS_TEXT: must be valid UTF-8, else -1) or binary, in order with the
 * others. From any thread. On an event loop it never waits: CSP_AGAIN when, the message taken, the
 * connection holds more than its high-water mark (256 KiB); send again once on_writable runs (a
 * connection that keeps being sent to regardless is closed, 1008, at 32 times the mark). On any
 * other thread it waits for room instead. 0; CSP_AGAIN; -1 when the peer will not see it (the
 * conversation is closing or closed). */
static inline int csp_ws_send(csp_ws *ws, const void *data, size_t size, int binary) {
    return ws ? ws->api->ws_send(ws, data, size, binary) : -1;
}

static inline int csp_ws_send_text(csp_ws *ws, const char *text) {
    return csp_ws_send(ws, text, strlen(text), CSP_WS_TEXT);
}

/* Begins the closing handshake with `code` (1000-1003, 1007-1011 or 3000-4999) and `reason` (NULL, or
 * UTF-8 of at most 123 bytes) after the messages already sent; on_close follows with the peer's
 * answer. From any thread; later sends give -1. 0, or -1 (a bad code or reason, or already closing). */
static inline int csp_ws_close(csp_ws *ws, unsigned code, const char *reason) {
    return ws ? ws->api->ws_close(ws, code, reason, reason ? strlen(reason) : 0) : -1;
}

/* Topics: a message published to a topic (csp_publish) reaches every WebSocket of the server
 * subscribed to it, whichever worker holds it (and with --cluster, whichever host), in the order one
 * publisher published. Topic names
 * are 1 to 128 bytes. A subscriber that cannot take a message (it holds 32 times the high-water mark
 * unread) is closed with 1008. A conversation leaves its topics when it closes. From any thread.
 * 0, or -1 (a bad name, a closed conversation). */
static inline int csp_ws_subscribe(csp_ws *ws, const char *topic) {
    return ws ? ws->api->ws_subscribe(ws, topic, strlen(topic)) : -1;
}

static inline int csp_ws_unsubscribe(csp_ws *ws, const char *topic) {
    return ws ? ws->api->ws_unsubscribe(ws, topic, strlen(topic)) : -1;
}

/* Publishes one message to `topic`, text (valid UTF-8) or binary. `api` is any csp_host_api the
 * host gave: req->api, ws->api, or the init context's ctx->api kept for other threads. From any
 * thread; never waits. 0; CSP_AGAIN when a subscriber of this worker was past its high-water mark
 * (it got the message; slow down), or, with --cluster, when the publishes waiting for Redis fill
 * --cluster-queue (the message reached this host's subscribers only); -1 for a bad topic or text,
 * a message over --ws-max-message, or no memory. With --cluster, a publish reaches the topic's
 * subscribers on every host (see on_topic_gap). */
static inline int csp_publish(const csp_host_api *api, const char *topic, const void *data, size_t size, int binary) {
    return api->publish(topic, strlen(topic), data, size, binary);
}

static inline int csp_publish_text(const csp_host_api *api, const char *topic, const char *text) {
    return csp_publish(api, topic, text, strlen(text), CSP_WS_TEXT);
}

#ifdef __cplusplus
}
#endif

#include <csp/text.h>
#include <csp/cookies.h>
#include <csp/multipart.h>

#endif /* CSP_CSP_H */
