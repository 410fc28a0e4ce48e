// npm's ws as a client of cspd: echo of text and binary (fragmented by ws when asked), a ping
// answered, a close with a code, and over TLS. Usage: node echo_client.mjs PORT TLS_PORT.
import WebSocket from "ws";
import { randomBytes } from "node:crypto";

function open(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

function next(ws) {
  return new Promise((resolve, reject) => {
    ws.once("message", (data, isBinary) => resolve({ data, isBinary }));
    ws.once("close", (code) => reject(new Error("closed " + code)));
  });
}

async function echo(url, options) {
  const ws = await open(url, options);
  if (!ws.extensions.includes("permessage-deflate")) throw new Error("not compressed: " + ws.extensions);
  ws.send("compressible ".repeat(4000));
  if ((await next(ws)).data.toString() !== "compressible ".repeat(4000)) throw new Error("a compressed message");
  for (const size of [0, 10, 126, 65000]) {
    const text = "ü".repeat(size / 2);
    ws.send(text);
    const got = await next(ws);
    if (got.isBinary || got.data.toString() !== text) throw new Error("text " + size);
    const bytes = randomBytes(size);
    ws.send(bytes, { binary: true, fin: true });
    const back = await next(ws);
    if (!back.isBinary || Buffer.compare(back.data, bytes) !== 0) throw new Error("binary " + size);
  }
  // Fragmented by hand: three frames of one message.
  ws.send("one ", { fin: false });
  ws.send("two ", { fin: false });
  ws.send("three", { fin: true });
  const whole = await next(ws);
  if (whole.data.toString() !== "one two three") throw new Error("fragments: " + whole.data);
  await new Promise((resolve, reject) => {
    ws.once("pong", resolve);
    ws.ping("p");
    setTimeout(() => reject(new Error("no pong")), 3000);
  });
  const closed = new Promise((resolve) => ws.once("close", (code) => resolve(code)));
  ws.close(1000, "done");
  const code = await closed;
  if (code !== 1000) throw new Error("close " + code);
}

const [port, tlsPort] = process.argv.slice(2);
await echo(`ws://127.0.0.1:${port}/csp/ws_echo`);
console.log("ok plain");
await echo(`wss://127.0.0.1:${tlsPort}/csp/ws_echo`, { rejectUnauthorized: false });
console.log("ok tls");
