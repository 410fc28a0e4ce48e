/* A 1 MiB body (bytes 0..255 repeating): the reply buffer grows past its start size. */
#include <csp/csp.h>

static int big(const csp_request *req, csp_reply *reply) {
    (void)req;
    unsigned char chunk[256];
    for (int i = 0; i < 256; ++i) chunk[i] = (unsigned char)i;
    csp_reply_set_content_type(reply, "application/octet-stream");
    for (int i = 0; i < 4096; ++i) csp_reply_append(reply, chunk, sizeof chunk);
    return 200;
}

CSP_HANDLER(big)
