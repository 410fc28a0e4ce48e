/* POST /csp/form_echo: echoes a form (application/x-www-form-urlencoded, or the query string):
 * every field, decoded, one per line; or a JSON body, sent back as it came (application/json).
 * Anything else: 415. */
#include <csp/csp.h>

static int form_echo(const csp_request *req, csp_reply *reply) {
    if (!csp_str_is(req->method, "POST")) {
        csp_reply_add_header(reply, "Allow", "POST");
        csp_reply_puts(reply, "POST a form or JSON here\n");
        return 405;
    }
    csp_str type = csp_header(req, "Content-Type");
    if (type.data && type.size >= 16 && memcmp(type.data, "application/json", 16) == 0) {
        csp_reply_set_content_type(reply, "application/json");
        csp_reply_append(reply, req->body.data, req->body.size);
        return 200;
    }
    if (!(type.data && type.size >= 33 && memcmp(type.data, "application/x-www-form-urlencoded", 33) == 0)) {
        csp_reply_puts(reply, "send application/json or application/x-www-form-urlencoded\n");
        return 415;
    }
    /* The host decodes the fields (query string first, then the body), repeated names included. */
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    csp_str name, value;
    for (size_t i = 0; csp_arg_at(req, i, &name, &value) == 0; ++i)
        csp_reply_printf(reply, "field: %.*s=%.*s\n", (int)name.size, name.data, (int)value.size, value.data);
    csp_str who = csp_form_arg(req, "name");
    if (who.data) csp_reply_printf(reply, "name is %.*s\n", (int)who.size, who.data);
    return 200;
}

CSP_HANDLER(form_echo)
