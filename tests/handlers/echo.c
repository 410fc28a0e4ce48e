/* A C handler that reports what the request view shows, one field a line. */
#include <csp/csp.h>

static void put_field(csp_reply *reply, const char *label, csp_str value) {
    if (value.data)
        csp_reply_printf(reply, "%s=%.*s\n", label, (int)value.size, value.data);
    else
        csp_reply_printf(reply, "%s=(absent)\n", label);
}

static int echo(const csp_request *req, csp_reply *reply) {
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    put_field(reply, "method", req->method);
    put_field(reply, "path", req->path);
    put_field(reply, "path-info", req->path_info);
    put_field(reply, "query", req->query);
    put_field(reply, "name", csp_query_arg(req, "name"));
    put_field(reply, "x-test", csp_header(req, "X-TEST"));
    put_field(reply, "client", req->client_addr);
    csp_reply_printf(reply, "version=%u.%u\n", req->http_major, req->http_minor);
    csp_reply_printf(reply, "body-size=%zu\n", req->body.size);
    csp_reply_append(reply, "body=", 5);
    csp_reply_append(reply, req->body.data, req->body.size);
    csp_reply_add_header(reply, "X-Echo", "yes");
    return 200;
}

CSP_HANDLER(echo)
