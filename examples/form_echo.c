/* POST /csp/form_echo: echoes a form (application/x-www-form-urlencoded: the "name" field)
 * or a JSON body (sent back as it came, as application/json). Anything else: 415. */
#include <csp/csp.h>

#include <string.h>

static int starts_with(csp_str s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.data && s.size >= n && memcmp(s.data, prefix, n) == 0;
}

static int form_echo(const csp_request *req, csp_reply *reply) {
    if (!(req->method.size == 4 && memcmp(req->method.data, "POST", 4) == 0)) {
        csp_reply_add_header(reply, "Allow", "POST");
        csp_reply_puts(reply, "POST a form or JSON here\n");
        return 405;
    }
    csp_str type = csp_header(req, "Content-Type");
    if (starts_with(type, "application/json")) {
        csp_reply_set_content_type(reply, "application/json");
        csp_reply_append(reply, req->body.data, req->body.size);
        return 200;
    }
    if (starts_with(type, "application/x-www-form-urlencoded")) {
        /* A form body has the same syntax as a query string: parse it by hand here. */
        csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
        const char *p = req->body.data, *end = req->body.data + req->body.size;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            const char *field_end = amp ? amp : end;
            csp_reply_printf(reply, "field: %.*s\n", (int)(field_end - p), p);
            p = amp ? amp + 1 : end;
        }
        return 200;
    }
    csp_reply_puts(reply, "send application/json or application/x-www-form-urlencoded\n");
    return 415;
}

CSP_HANDLER(form_echo)
