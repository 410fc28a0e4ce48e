/* FROZEN: the SDK header of ABI 1 exactly as it shipped (before ABI 2.0). Handlers built
 * against it must keep loading and working on every 2.x host; tests/handlers/abi1_echo.c is
 * built with it to check that. Never edit this file. */
/* cspd handler SDK: the only header a handler needs, in C or C++.
 *
 * A handler is a shared object that exports one symbol, `csp_handler`, a
 * descriptor carrying the ABI version and the entry point. Define it with
 * CSP_HANDLER(fn) or CSP_HANDLER_WITH_HOOKS(fn, init, cleanup).
 *
 *   static int hello(const csp_request *req, csp_reply *reply) {
 *       csp_reply_set_content_type(reply, "text/html");
 *       csp_reply_puts(reply, "<h1>HELLO WORLD</h1>");
 *       return 200;
 *   }
 *   CSP_HANDLER(hello)
 *
 * Threading: the host may call one handler from several event loops at once;
 * shared state reached through `req->state` must be thread-safe.
 * Lifetime: every pointer in csp_request and csp_reply is valid only during
 * the call. The state pointer lives from init to cleanup.
 */
#ifndef CSP_CSP_H
#define CSP_CSP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct below changes layout; the host refuses others. */
#define CSP_ABI_VERSION 1u

#define CSP_EXPORT __attribute__((visibility("default")))

/* A byte range. `data == NULL` means "absent", distinct from empty. */
typedef struct csp_str {
    const char *data;
    size_t size;
} csp_str;

typedef struct csp_request csp_request;
typedef struct csp_reply csp_reply;

/* Services the host implements; handlers reach them through the inline
 * functions below, never directly. */
typedef struct csp_host_api {
    /* Grows reply->data to hold at least `capacity` bytes; 0 on success. */
    int (*reply_reserve)(csp_reply *reply, size_t capacity);
    /* The host copies the value; 0 on success, -1 if it is not a valid token. */
    int (*reply_set_content_type)(csp_reply *reply, const char *type, size_t size);
    /* The host copies both; -1 for an invalid name or a value with CR/LF. */
    int (*reply_add_header)(csp_reply *reply, const char *name, size_t name_size,
                            const char *value, size_t value_size);
    /* Percent-decoded value of the first `name=` in the query string. */
    csp_str (*request_query_arg)(const csp_request *req, const char *name, size_t name_size);
    /* Case-insensitive header lookup; the first match. */
    csp_str (*request_header)(const csp_request *req, const char *name, size_t name_size);
} csp_host_api;

/* Read-only view of one request. */
struct csp_request {
    const csp_host_api *api;
    csp_str method;      /* "GET", "POST", ... */
    csp_str path;        /* percent-decoded, e.g. "/csp/hello" */
    csp_str query;       /* raw text after '?', empty when none */
    csp_str body;        /* whole body, de-chunked */
    csp_str client_addr; /* "127.0.0.1" or "::1" */
    unsigned short client_port;
    unsigned char http_major, http_minor;
    void *state;         /* what init stored; NULL without init */
    const void *host;    /* host-private */
};

/* The reply buffer: the body is appended in place, G-WAN xbuf style. */
struct csp_reply {
    char *data;
    size_t size;
    size_t capacity;
    const csp_host_api *api;
    void *host; /* host-private */
};

typedef int (*csp_handle_fn)(const csp_request *req, csp_reply *reply);
/* Called once on load; store per-version state in *state. Nonzero refuses the load. */
typedef int (*csp_init_fn)(void **state);
/* Called once before unload, after the last request on this version. */
typedef void (*csp_cleanup_fn)(void *state);

typedef struct csp_handler_descriptor {
    unsigned abi_version; /* always CSP_ABI_VERSION; checked before anything else */
    unsigned descriptor_size;
    csp_handle_fn handle; /* returns the HTTP status (100..599) */
    csp_init_fn init;     /* optional */
    csp_cleanup_fn cleanup; /* optional */
} csp_handler_descriptor;

#ifdef __cplusplus
#define CSP_EXTERN_C extern "C"
#else
#define CSP_EXTERN_C
#endif

#define CSP_HANDLER_WITH_HOOKS(handle_fn, init_fn, cleanup_fn)                     \
    CSP_EXTERN_C CSP_EXPORT const csp_handler_descriptor csp_handler = {          \
        CSP_ABI_VERSION, (unsigned)sizeof(csp_handler_descriptor), (handle_fn),   \
        (init_fn), (cleanup_fn)};

#define CSP_HANDLER(handle_fn) CSP_HANDLER_WITH_HOOKS(handle_fn, NULL, NULL)

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

/* Adds a response header; Content-Length, Date and Server are the host's. */
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

#ifdef __cplusplus
}
#endif

#endif /* CSP_CSP_H */
