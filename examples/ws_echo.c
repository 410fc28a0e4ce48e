/* A WebSocket echo at /csp/ws_echo: every message comes back as it came, text as text, binary as
 * binary. A request that is not a WebSocket handshake gets what RFC 6455 asks for: 426 with
 * "Upgrade: websocket" for a plain GET, 426 naming version 13 for another version.
 *
 *   cc -O2 -shared -fPIC -fvisibility=hidden -I sdk/include examples/ws_echo.c -o handlers/ws_echo.so
 *   websocat ws://127.0.0.1:8080/csp/ws_echo     (or any WebSocket client)
 */
#include <csp/csp.h>

/* On the connection's event loop: the send never waits (a client that stops reading is read no
 * more either, so the echo cannot outrun it by more than one read). */
static void echo_message(csp_ws *ws, const void *data, size_t size, int binary, void *user_data) {
    (void)user_data;
    csp_ws_send(ws, data, size, binary);
}

static int ws_echo(const csp_request *req, csp_reply *reply) {
    static const csp_ws_callbacks callbacks = {.size = sizeof(csp_ws_callbacks), .on_message = echo_message};
    if (!csp_ws_accept(req, reply, &callbacks, NULL)) return csp_ws_refuse(req, reply);
    return CSP_WS_ACCEPTED;
}

CSP_HANDLER(ws_echo)
