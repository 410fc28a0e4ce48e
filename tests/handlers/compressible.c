/* An answer to compress, shaped by its query: ?size=N bytes of JSON rows (default 4096),
 * &type=T (default application/json), &etag=1 (a strong ETag), &vary=V, &cc=V (Cache-Control),
 * &ce=V (a Content-Encoding of its own), &status=N, &cache=S (csp_reply_cache), &off=1
 * (csp_reply_compress CSP_COMPRESS_OFF; built for 2.4, it has no such call and ignores it). */
#include <csp/csp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int arg_int(const csp_request *req, const char *name, int fallback) {
    csp_str v = csp_query_arg(req, name);
    char text[16];
    if (!v.data || !v.size || v.size >= sizeof text) return fallback;
    memcpy(text, v.data, v.size);
    text[v.size] = 0;
    return atoi(text);
}

static void header_from(const csp_request *req, csp_reply *reply, const char *arg, const char *header) {
    csp_str v = csp_query_arg(req, arg);
    if (v.data && v.size) reply->api->reply_add_header(reply, header, strlen(header), v.data, v.size);
}

static int compressible(const csp_request *req, csp_reply *reply) {
    const int size = arg_int(req, "size", 4096);
    csp_str type = csp_query_arg(req, "type");
    if (type.data && type.size) {
        char text[128];
        if (type.size >= sizeof text) return 400;
        memcpy(text, type.data, type.size);
        text[type.size] = 0;
        csp_reply_set_content_type(reply, text);
    } else {
        csp_reply_set_content_type(reply, "application/json");
    }
    if (arg_int(req, "etag", 0)) csp_reply_add_header(reply, "ETag", "\"v1-rows\"");
    header_from(req, reply, "vary", "Vary");
    header_from(req, reply, "cc", "Cache-Control");
    header_from(req, reply, "ce", "Content-Encoding");
    int written = 0;
    for (int i = 0; written < size; ++i) {
        char row[64];
        int n = snprintf(row, sizeof row, "{\"id\":%d,\"name\":\"user%d\",\"on\":%s},", i, (i * 7919) % 1000,
                         i % 3 ? "true" : "false");
        if (n > size - written) n = size - written;
        csp_reply_append(reply, row, (size_t)n);
        written += n;
    }
    const int cache = arg_int(req, "cache", 0);
    if (cache > 0) csp_reply_cache(reply, (unsigned)cache);
#if CSP_ABI_MINOR >= 5
    if (arg_int(req, "off", 0) && csp_reply_compress(reply, CSP_COMPRESS_OFF) != 0) return 500;
    if (csp_reply_compress(reply, (csp_compress)7) != -1) return 500;  /* an unknown mode is refused */
#endif
    return arg_int(req, "status", 200);
}

CSP_HANDLER(compressible)
