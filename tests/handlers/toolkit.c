/* The SDK 2.2 toolkit as the integration tests reach it, one sub-path per call:
 *   /args             every argument (csp_arg_at), one "name=value" line each
 *   /arg?name=N       csp_form_arg(N), or "absent"
 *   /headers          every header (csp_header_at), "name: value" lines
 *   /cookie?name=N    csp_cookie(N), or "absent"
 *   /id               csp_request_id
 *   /log?level=L&n=K&text=T   K csp_log lines at level L; the body counts written and dropped ones
 *   /kv/get?key=K  /kv/put?key=K&value=V&ttl=S  /kv/add?key=K&delta=D  /kv/del?key=K
 *   /set-cookie?name=N&value=V&same_site=S&secure=1   csp_reply_set_cookie; 400 if refused
 *   /cached-host     "host=" the Host header, kept in the reply cache for 60 s
 *   /cached?seconds=S&vary=H&cookie=1&status=C   "call N" (N counted in the shared store, so it
 *                     survives reloads), kept by csp_reply_cache for S seconds
 *   /body?defer=1     "size N fnv H" of the request body (FNV-1a 64); with defer, answered from a
 *                     loop timer after csp_reply_defer, when the call has long returned
 *   /etag?tag=T&modified=DATE&cache=S   a 200 with ETag: "T" and/or Last-Modified: DATE, for the
 *                     host's 304/412; with S, kept by csp_reply_cache for S seconds
 * Built twice: as toolkit.so, and with TOOLKIT_BLOCKING as the blocking toolkit_blocking.so. */
#include <csp/csp.h>

#include <stdlib.h>

static void put_str(csp_reply *reply, csp_str s) {
    if (s.data) csp_reply_append(reply, s.data, s.size);
    else csp_reply_puts(reply, "absent");
}

/* A NUL-terminated copy of argument `name` ("" if absent), in `out` of `size` bytes. */
static const char *arg(const csp_request *req, const char *name, char *out, size_t size) {
    csp_str v = csp_form_arg(req, name);
    size_t n = v.data ? (v.size < size - 1 ? v.size : size - 1) : 0;
    if (n) memcpy(out, v.data, n);
    out[n] = '\0';
    return out;
}

static int kv(const csp_request *req, csp_reply *reply, const char *op) {
    char key[256], value[2048], number[32];
    arg(req, "key", key, sizeof key);
    if (strcmp(op, "get") == 0) {
        char out[4096];
        size_t size = 0;
        int rc = csp_kv_get(req, key, out, sizeof out, &size);
        if (rc != 0) return csp_reply_printf(reply, "rc %d\n", rc), 404;
        csp_reply_append(reply, out, size < sizeof out ? size : sizeof out);
        return 200;
    }
    if (strcmp(op, "put") == 0) {
        arg(req, "value", value, sizeof value);
        int rc = csp_kv_put(req, key, value, strlen(value), (unsigned)atoi(arg(req, "ttl", number, sizeof number)));
        csp_reply_printf(reply, "rc %d\n", rc);
        return rc == 0 ? 200 : 507;
    }
    if (strcmp(op, "add") == 0) {
        long long delta = csp_form_int(req, "delta", -1000000, 1000000, 1);
        int64_t n = csp_kv_add(req, key, delta);
        if (n == CSP_KV_ERROR) return csp_reply_puts(reply, "error\n"), 409;
        csp_reply_printf(reply, "%lld\n", (long long)n);
        return 200;
    }
    if (strcmp(op, "del") == 0) {
        int rc = csp_kv_delete(req, key);
        csp_reply_printf(reply, "rc %d\n", rc);
        return rc == 0 ? 200 : 404;
    }
    return 404;
}

static void body_digest(const csp_request *req, csp_reply *reply) {
    unsigned long long h = 14695981039346656037ull;
    for (size_t i = 0; i < req->body.size; ++i) h = (h ^ (unsigned char)req->body.data[i]) * 1099511628211ull;
    csp_reply_printf(reply, "size %zu fnv %016llx", req->body.size, h);
}

static void digest_later(csp_pending *pending, void *user_data) {
    body_digest(user_data, csp_pending_reply(pending));
    csp_pending_finish(pending, 200);
}

static int toolkit(const csp_request *req, csp_reply *reply) {
    csp_reply_set_content_type(reply, "text/plain");
    csp_str path = req->path_info, name, value;
    char text[512];
    if (csp_str_is(path, "/args")) {
        for (size_t i = 0; csp_arg_at(req, i, &name, &value) == 0; ++i)
            csp_reply_printf(reply, "%.*s=%.*s\n", (int)name.size, name.data, (int)value.size, value.data);
        return 200;
    }
    if (csp_str_is(path, "/arg")) return put_str(reply, csp_form_arg(req, arg(req, "name", text, sizeof text))), 200;
    if (csp_str_is(path, "/headers")) {
        for (size_t i = 0; csp_header_at(req, i, &name, &value) == 0; ++i)
            csp_reply_printf(reply, "%.*s: %.*s\n", (int)name.size, name.data, (int)value.size, value.data);
        return 200;
    }
    if (csp_str_is(path, "/cookie")) return put_str(reply, csp_cookie(req, arg(req, "name", text, sizeof text))), 200;
    if (csp_str_is(path, "/id")) return put_str(reply, csp_request_id(req)), 200;
    if (csp_str_is(path, "/log")) {
        int level = (int)csp_form_int(req, "level", -5, 5, CSP_LOG_INFO);
        long long n = csp_form_int(req, "n", 1, 100000, 1);
        arg(req, "text", text, sizeof text);
        long long written = 0, dropped = 0, refused = 0;
        for (long long i = 0; i < n; ++i) {
            int rc = csp_log(req, level, "%s %lld", text, i);
            written += rc == 0, dropped += rc == 1, refused += rc < 0;
        }
        csp_reply_printf(reply, "written %lld dropped %lld refused %lld\n", written, dropped, refused);
        return 200;
    }
    if (path.size > 4 && memcmp(path.data, "/kv/", 4) == 0) {
        char op[8] = {0};
        memcpy(op, path.data + 4, path.size - 4 < 7 ? path.size - 4 : 7);
        return kv(req, reply, op);
    }
    if (csp_str_is(path, "/body")) {
        if (csp_form_int(req, "defer", 0, 1, 0)) {
            csp_pending *pending = csp_reply_defer(reply);
            if (pending && csp_loop_timer(pending, 1, digest_later, (void *)req) == 0) return CSP_DEFERRED;
            if (pending) return csp_pending_finish(pending, 500), CSP_DEFERRED;
        }
        body_digest(req, reply);
        return 200;
    }
    if (csp_str_is(path, "/etag")) {
        char tag[80], quoted[96], modified[64];
        if (*arg(req, "tag", tag, sizeof tag)) {
            snprintf(quoted, sizeof quoted, "\"%s\"", tag);
            csp_reply_add_header(reply, "ETag", quoted);
        }
        if (*arg(req, "modified", modified, sizeof modified)) csp_reply_add_header(reply, "Last-Modified", modified);
        csp_reply_cache(reply, (unsigned)csp_form_int(req, "cache", 0, 1000000, 0));
        csp_reply_puts(reply, "the representation\n");
        return 200;
    }
    if (csp_str_is(path, "/cached-host")) {
        csp_str host = csp_header(req, "Host");
        csp_reply_cache(reply, 60);
        csp_reply_printf(reply, "host=%.*s", (int)host.size, host.data ? host.data : "");
        return 200;
    }
    if (csp_str_is(path, "/cached")) {
        char vary[64];
        const int64_t n = csp_kv_add(req, "toolkit:cached-calls", 1);
        csp_reply_cache(reply, (unsigned)csp_form_int(req, "seconds", 0, 1000000, 0));
        if (*arg(req, "vary", vary, sizeof vary)) csp_reply_cache_vary(reply, vary);
        if (csp_form_int(req, "cookie", 0, 1, 0)) csp_reply_add_header(reply, "Set-Cookie", "c=1");
        csp_reply_add_header(reply, "X-Made", "yes");
        csp_reply_printf(reply, "call %lld", (long long)n);
        return (int)csp_form_int(req, "status", 200, 599, 200);
    }
    if (csp_str_is(path, "/set-cookie")) {
        char cookie_name[128], cookie_value[256], same_site[16];
        csp_cookie_options o = {0};
        o.path = "/";
        o.http_only = 1;
        o.secure = csp_form_int(req, "secure", 0, 1, 0) == 1;
        o.same_site = *arg(req, "same_site", same_site, sizeof same_site) ? same_site : NULL;
        o.max_age = csp_form_int(req, "max_age", -1, 1000000, 0);
        if (csp_reply_set_cookie(reply, arg(req, "name", cookie_name, sizeof cookie_name),
                                 arg(req, "value", cookie_value, sizeof cookie_value), &o) != 0)
            return csp_reply_puts(reply, "refused\n"), 400;
        return csp_reply_puts(reply, "set\n"), 200;
    }
    return 404;
}

#ifdef TOOLKIT_BLOCKING
CSP_BLOCKING_HANDLER(toolkit)
#else
CSP_HANDLER(toolkit)
#endif
