// A chat room at /csp/chat: GET it in a browser for the page; the page opens a WebSocket to the
// same URL, and every text message any client sends reaches every client in the room -- the sender
// too -- whichever worker process holds its connection (a topic, "chat", carries it across them),
// and with --cluster whichever host. Each newcomer is told which worker (and process) it reached.
// Lines lost on their way from another host (a long cut from Redis) are said in the room.
//
//   c++ -std=c++20 -O2 -shared -fPIC -fvisibility=hidden -fno-gnu-unique -I sdk/include examples/chat.cpp -o handlers/chat.so
#include <csp/csp.hpp>

#include <unistd.h>

#include <string>

namespace {

constexpr std::string_view kRoom = "chat";
constexpr std::size_t kMaxLine = 2000;  // a chat line, not a file transfer

unsigned g_worker = 0;  // set by init: which worker this copy of the handler runs in

constexpr std::string_view kPage = R"PAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>cspd chat</title>
<style>
 body { font: 16px system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
 #log { list-style: none; padding: 0; min-height: 12rem; border: 1px solid #ccc; border-radius: 6px; }
 #log li { padding: .3rem .6rem; border-bottom: 1px solid #eee; }
 form { display: flex; gap: .5rem; margin-top: .5rem; } #text { flex: 1; padding: .4rem; }
 #state { color: #666; font-size: .9rem; }
</style></head>
<body>
<h1>Chat</h1>
<p id="state" data-state="connecting">connecting…</p>
<ul id="log"></ul>
<form id="say"><input id="text" autocomplete="off" placeholder="Say something" maxlength="2000">
<button id="send">Send</button></form>
<script>
const state = document.getElementById("state"), log = document.getElementById("log");
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + location.pathname);
ws.onopen = () => { state.textContent = "connected"; state.dataset.state = "open"; };
ws.onclose = (e) => { state.textContent = "closed (" + e.code + ")"; state.dataset.state = "closed"; };
ws.onmessage = (e) => {
  if (e.data.startsWith("worker ")) { state.dataset.worker = e.data.slice(7); return; }
  const li = document.createElement("li");
  li.textContent = e.data;
  log.append(li);
};
document.getElementById("say").onsubmit = (e) => {
  e.preventDefault();
  const text = document.getElementById("text");
  if (text.value && ws.readyState === WebSocket.OPEN) ws.send(text.value);
  text.value = "";
};
</script></body></html>
)PAGE";

int init(const csp_init_context* ctx, void** state) {
    g_worker = ctx->worker_index;
    *state = nullptr;
    return 0;
}

int chat(const csp::request& req, csp::reply& reply) {
    csp::websocket ws = csp::websocket::accept(req, reply, {
        .on_message = [](csp::websocket from, std::string_view text, bool binary) {
            if (binary || text.size() > kMaxLine) return;  // the room takes lines of text
            from.publish(kRoom, text);                   // to everyone, on every worker, the sender too
        },
        // --cluster: lines were lost for good on their way from another host; say so.
        .on_topic_gap = [](csp::websocket to, std::string_view) {
            to.send("(some lines were lost on their way from another server)");
        },
    });
    if (ws) {
        ws.subscribe(kRoom);
        ws.send("worker " + std::to_string(g_worker) + " pid " + std::to_string(::getpid()));
        return CSP_WS_ACCEPTED;
    }
    if (req.header("upgrade")) return csp::websocket::refuse(req, reply);
    reply.content_type("text/html; charset=utf-8");
    reply << kPage;
    return 200;
}

}  // namespace

CSP_CPP_HANDLER_WITH_CONTEXT(chat, init, nullptr)
