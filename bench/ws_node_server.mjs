// The peer bench/ws.py measures cspd against: npm's ws (tests/ws), one Node process, doing what
// examples/ws_echo.c and examples/chat.cpp do -- /csp/ws_echo sends every message back, /csp/chat
// says "worker 0" to a newcomer and sends every text message to every client of /csp/chat.
//   node bench/ws_node_server.mjs PORT
import { createServer } from "node:http";
import { WebSocketServer } from "../tests/ws/node_modules/ws/wrapper.mjs";

const port = Number(process.argv[2]);
const echo = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1 << 20 });
const chat = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1 << 20 });
echo.on("connection", (ws) => ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary })));
chat.on("connection", (ws) => {
  ws.send("worker 0");
  ws.on("message", (data, isBinary) => {
    if (isBinary) return;
    for (const client of chat.clients) client.send(data, { binary: false });
  });
});
const server = createServer((req, res) => { res.writeHead(426, { Upgrade: "websocket" }); res.end(); });
server.on("upgrade", (req, socket, head) => {
  const target = req.url === "/csp/ws_echo" ? echo : req.url === "/csp/chat" ? chat : null;
  if (!target) return socket.destroy();
  target.handleUpgrade(req, socket, head, (ws) => target.emit("connection", ws, req));
});
server.listen(port, "127.0.0.1");
