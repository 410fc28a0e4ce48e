// The dashboard: polls /-/status twice a second and draws what it says. No framework, no library:
// a handler's requests per second are the difference between two polls, charted on a canvas.
"use strict";

const POLL_MS = 500;
const HISTORY = 60; // points per chart: 30 s
const history = new Map(); // handler name -> {last, at, rates[]}

function element(tag, attributes = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function rateOf(handler, now) {
  let h = history.get(handler.name);
  if (!h) {
    h = { last: handler.requests, at: now, rates: [] };
    history.set(handler.name, h);
    return 0;
  }
  const seconds = (now - h.at) / 1000;
  const rate = seconds > 0 ? Math.max(0, handler.requests - h.last) / seconds : 0;
  h.last = handler.requests;
  h.at = now;
  h.rates.push(rate);
  if (h.rates.length > HISTORY) h.rates.shift();
  return rate;
}

function chart(canvas, rates) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth * ratio, height = canvas.clientHeight * ratio;
  canvas.width = width;
  canvas.height = height;
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, width, height);
  const top = Math.max(1, ...rates);
  g.strokeStyle = "#1f6feb";
  g.lineWidth = 1.5 * ratio;
  g.beginPath();
  rates.forEach((r, i) => {
    const x = (i / (HISTORY - 1)) * width, y = height - (r / top) * (height - 2 * ratio) - ratio;
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
}

function card(handler, rate) {
  const c = element("article", { class: "card", "data-handler": handler.name, "data-state": handler.state });
  const title = element("h3");
  title.append(element("span", {}, handler.name), element("span", { class: "state " + handler.state.replace(" ", "-") }, handler.state));
  c.append(title);
  const numbers = element("div", { class: "numbers" });
  const add = (label, value) => {
    const item = element("span", {}, label + " ");
    item.append(element("b", {}, String(value)));
    numbers.append(item);
  };
  add("req/s", rate < 10 ? rate.toFixed(1) : Math.round(rate).toLocaleString());
  add("requests", handler.requests.toLocaleString());
  add("errors", handler.errors);
  add("crashes", handler.crashes);
  if (handler.rollbacks) add("rollbacks", handler.rollbacks);
  if (handler.version) add("version", `${handler.version.size} B, fnv ${handler.version.fnv1a64.slice(0, 8)}`);
  c.append(numbers);
  const canvas = element("canvas", { "aria-label": `requests per second of ${handler.name}` });
  c.append(canvas);
  if (handler.rolled_back)
    c.append(element("p", { class: "note" }, `rolled back from fnv ${handler.rolled_back.from.fnv1a64.slice(0, 8)} ` +
      `at ${new Date(handler.rolled_back.since_unix_ms).toLocaleTimeString()}: ${handler.rolled_back.why}`));
  if (handler.vetting_since_unix_ms)
    c.append(element("p", { class: "note" }, "a new version is being vetted since " +
      new Date(handler.vetting_since_unix_ms).toLocaleTimeString() + (handler.version ? "; the live one serves meanwhile" : "")));
  if (handler.last_refusal && handler.state !== "live" && handler.state !== "vetting")
    c.append(element("p", { class: "reason" }, handler.last_refusal));
  else if (handler.last_refusal)
    c.append(element("p", { class: "reason" }, "last refused: " + handler.last_refusal));
  return { c, canvas };
}

function draw(status) {
  const now = Date.now();
  const handlers = document.getElementById("handlers");
  handlers.replaceChildren();
  for (const h of status.handlers) {
    const rate = rateOf(h, now);
    const { c, canvas } = card(h, rate);
    handlers.append(c);
    chart(canvas, history.get(h.name).rates);
  }
  const workers = document.getElementById("workers");
  workers.replaceChildren();
  for (const w of status.workers) {
    const row = element("tr");
    for (const v of [w.slot, w.pid, w.state, w.restarts, w.open_connections, w.requests.toLocaleString()])
      row.append(element("td", {}, String(v)));
    workers.append(row);
  }
  drawTls(status.tls);
  drawProtocols(status);
  drawSandbox(status.sandbox);
  const live = status.handlers.filter((h) => h.state === "live" || h.state === "rolled back" || (h.state === "vetting" && h.version)).length;
  document.getElementById("summary").textContent =
    `${live} live handler(s), ${status.workers.length} event loop(s), ${status.open_connections} open connection(s), ` +
    `${status.worker_restarts} worker restart(s); up since ${new Date(status.started_unix_ms).toLocaleString()}`;
}

// Requests by protocol, and the WebSocket conversations: open now, messages, how they ended.
function drawProtocols(status) {
  const n = (x) => Number(x || 0).toLocaleString();
  const ws = status.websocket || {};
  const closes = Object.entries(ws.closes || {}).map(([code, count]) => `${n(count)}×${code}`).join(", ") || "none";
  document.getElementById("protocols-summary").textContent =
    `HTTP/1.1: ${n(status.http1?.requests)} request(s). HTTP/2: ${n(status.http2?.requests)} request(s) on ` +
    `${n(status.http2?.connections)} connection(s). WebSocket: ${n(ws.open)} open of ${n(ws.accepted)} accepted, ` +
    `${n(ws.messages_in)} message(s) in, ${n(ws.messages_out)} out, ${n(ws.published_deliveries)} published ` +
    `deliveries; closes ${closes}.`;
}

// What the kernel holds handler code to, and the calls it denied, by handler.
function drawSandbox(sandbox) {
  if (!sandbox) return;
  const parts = [];
  if (!sandbox.enabled) parts.push("off (--no-sandbox): handlers may do all the workers' account may");
  else {
    parts.push(sandbox.seccomp ? "call filter (seccomp)" : "no call filter (this kernel has no seccomp)");
    parts.push(sandbox.landlock ? `file rules (Landlock ABI ${sandbox.landlock})`
                                : sandbox.log_only ? "no file rules (--sandbox-log-only)" : "no file rules (this kernel has no Landlock)");
    if (sandbox.log_only) parts.push("log only: denied calls are reported, then run");
    parts.push(sandbox.exec ? "handlers may start programs" : "handlers may not start programs");
  }
  const total = sandbox.denied.reduce((sum, d) => sum + d.count, 0);
  document.getElementById("sandbox-summary").textContent = `${parts.join("; ")}. ${total.toLocaleString()} call(s) denied.`;
  const table = document.getElementById("sandbox-denials");
  table.hidden = sandbox.denied.length === 0;
  const rows = table.querySelector("tbody");
  rows.replaceChildren();
  for (const d of sandbox.denied) {
    const row = element("tr", { class: "warn" });
    for (const v of [d.handler || "(outside a handler)", d.call, d.count.toLocaleString()]) row.append(element("td", {}, String(v)));
    rows.append(row);
  }
}

// Shown only when the server serves HTTPS (--tls-port): its certificates as the key process judged them.
function drawTls(tls) {
  document.getElementById("tls").hidden = !tls;
  if (!tls) return;
  const rows = document.getElementById("certificates");
  rows.replaceChildren();
  for (const c of tls.certificates) {
    const row = element("tr", { class: c.state === "serving" ? "" : "warn" });
    const refusal = c.last_refusal ? `${c.last_refusal.why} (${new Date(c.last_refusal.at_unix * 1000).toLocaleString()})` : "";
    for (const v of [c.file, c.state, (c.names || []).join(", "),
      c.not_after_unix ? new Date(c.not_after_unix * 1000).toLocaleDateString() : "", c.sha256 || "", refusal])
      row.append(element("td", {}, String(v)));
    rows.append(row);
  }
  const failures = Object.values(tls.failures).reduce((a, b) => a + b, 0);
  document.getElementById("tls-summary").textContent =
    `${tls.handshakes["TLSv1.3"]} TLS 1.3 and ${tls.handshakes["TLSv1.2"]} TLS 1.2 handshake(s), ` +
    `${tls.resumed} resumed, ${failures} failed`;
}

async function poll() {
  try {
    const response = await fetch("/-/status", { cache: "no-store" });
    if (!response.ok) throw new Error(String(response.status));
    draw(await response.json());
    document.getElementById("offline").hidden = true;
  } catch {
    document.getElementById("offline").hidden = false;
  }
  setTimeout(poll, POLL_MS);
}

poll();
