/* Built against the frozen ABI 1 header (tests/abi1/csp/csp.h), as handlers were before
 * ABI 2: it must load and answer unchanged on this host. Echoes what ABI 1 could see. */
#include <csp/csp.h>

static int handle(const csp_request *req, csp_reply *reply) {
    csp_str name = csp_query_arg(req, "name");
    csp_str agent = csp_header(req, "X-Agent");
    csp_reply_set_content_type(reply, "text/plain");
    csp_reply_add_header(reply, "X-ABI", "1");
    csp_reply_printf(reply, "abi1 %.*s %.*s name=%.*s agent=%.*s body=%.*s\n", (int)req->method.size, req->method.data,
                     (int)req->path.size, req->path.data, (int)name.size, name.data ? name.data : "",
                     (int)agent.size, agent.data ? agent.data : "", (int)req->body.size, req->body.data);
    return CSP_ABI_VERSION == 1u ? 200 : 500;
}

CSP_HANDLER(handle)
